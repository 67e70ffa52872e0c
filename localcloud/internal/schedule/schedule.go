package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/clubdev/club/internal/clock"
	"github.com/clubdev/club/localcloud/invoke"
)

// The local cloud's fixed region and account.
const (
	region  = "us-east-1"
	account = "000000000000"
)

// Retry policy for a failed delivery. EventBridge hands the event to
// Lambda's asynchronous invoke, which retries a function error twice (about
// one and two minutes later); locally the waits are one and two seconds, not
// scaled by Options.Speed.
const (
	retryAttempts = 2
	retryDelay    = time.Second
)

// Schedule is the configuration of one scheduled rule targeting a function.
type Schedule struct {
	Name         string
	FunctionName string
	// Expression is rate(...) or cron(...); see ParseExpression.
	Expression string
	// Input, when set, is the JSON the function receives instead of the
	// scheduled event (the target's Input).
	Input   string
	Enabled bool
	// RuleARN is the event's resources entry; empty means
	// arn:aws:events:us-east-1:000000000000:rule/<Name>.
	RuleARN string
}

// Options tune a Runner.
type Options struct {
	// Speed scales schedule time: 60 makes a minute of schedule time pass in
	// a real second. 0 means 1 (real time).
	Speed float64
	// LastFire, when set, is the schedule time of the last fire of an
	// earlier run (a persistent local cloud keeps it): Run carries on from
	// it, so a fire time that passed while the local cloud was stopped is
	// fired once at the start (only the latest, as after a sleeping host).
	// A LastFire not before the clock's time is ignored.
	LastFire time.Time
	// OnFire, when set, is called with the schedule time of every fire
	// Run makes, before its delivery starts.
	OnFire func(time.Time)
}

// Stats counts what a Runner did since it was created.
type Stats struct {
	Fires       int64 // events produced (scheduled or FireNow)
	Skipped     int64 // fire times missed because the process was not running them (e.g. the host slept)
	Invocations int64 // invoke attempts, retries included
	Delivered   int64 // events the function accepted
	Failed      int64 // events given up after the retries
}

// FunctionError reports that the function returned an error.
type FunctionError struct {
	Function string
	invoke.ErrorInfo
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("function %s failed: %s: %s", e.Function, e.ErrorType, e.ErrorMessage)
}

// Runner fires one schedule. Run and FireNow may be used concurrently.
type Runner struct {
	cfg     Schedule
	expr    Expression
	ruleARN string
	invoker invoke.Invoker
	clock   clock.Clock
	speed   float64
	logger  *slog.Logger
	opts    Options

	wg    sync.WaitGroup // deliveries started by Run
	mu    sync.Mutex     // guards stats
	stats Stats
}

// New validates the schedule and returns its Runner. A nil clk means the
// wall clock (clock.Real), a nil logger slog.Default().
func New(s Schedule, invoker invoke.Invoker, clk clock.Clock, logger *slog.Logger, opts Options) (*Runner, error) {
	var errs []error
	if s.Name == "" {
		errs = append(errs, errors.New("Name is required"))
	}
	if s.FunctionName == "" {
		errs = append(errs, errors.New("FunctionName is required"))
	}
	expr, err := ParseExpression(s.Expression)
	if err != nil {
		errs = append(errs, err)
	}
	if s.Input != "" && !json.Valid([]byte(s.Input)) {
		errs = append(errs, errors.New("Input is not valid JSON"))
	}
	if opts.Speed < 0 || math.IsNaN(opts.Speed) || math.IsInf(opts.Speed, 0) {
		errs = append(errs, fmt.Errorf("Speed %v must be a positive number", opts.Speed))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("schedule %s: %w", s.Name, err)
	}
	if opts.Speed == 0 {
		opts.Speed = 1
	}
	if clk == nil {
		clk = clock.Real{}
	}
	if logger == nil {
		logger = slog.Default()
	}
	ruleARN := s.RuleARN
	if ruleARN == "" {
		ruleARN = fmt.Sprintf("arn:aws:events:%s:%s:rule/%s", region, account, s.Name)
	}
	return &Runner{
		cfg:     s,
		expr:    expr,
		ruleARN: ruleARN,
		invoker: invoker,
		clock:   clk,
		speed:   opts.Speed,
		opts:    opts,
		logger:  logger.With("schedule", s.Name, "function", s.FunctionName, "expression", s.Expression),
	}, nil
}

// Stats returns a snapshot of the counters.
func (r *Runner) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Run fires the schedule until ctx is cancelled, then waits for deliveries
// in progress (which stop retrying) and returns nil. Schedule time starts at
// the clock's time when Run is called and runs Speed times faster. Each fire
// is delivered in the background, like an asynchronous invoke, so a slow or
// failing function never delays the next fire. Fire times missed while the
// process could not keep up (a sleeping host) are skipped, not replayed:
// only the latest is fired. A disabled schedule returns at once. Run must be
// called at most once.
func (r *Runner) Run(ctx context.Context) error {
	if !r.cfg.Enabled {
		r.logger.Info("schedule disabled")
		return nil
	}
	defer r.wg.Wait()
	start := r.clock.Now()
	last := start // schedule time of the previous fire
	if l := r.opts.LastFire; !l.IsZero() && l.Before(start) {
		last = l
	}
	for {
		next := r.expr.Next(last)
		if next.IsZero() {
			r.logger.Warn("schedule has no future fire times")
			<-ctx.Done()
			return nil
		}
		if wait := r.realDuration(next.Sub(r.scheduleNow(start))); wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-r.clock.After(wait):
			}
		} else if ctx.Err() != nil {
			return nil
		}

		now := r.scheduleNow(start)
		last = next
		skipped := int64(0)
		for n := r.expr.Next(last); !n.IsZero() && !n.After(now); n = r.expr.Next(last) {
			last = n
			skipped++
		}
		if skipped > 0 {
			r.count(func(s *Stats) { s.Skipped += skipped })
			r.logger.Warn("fire times missed; firing only the latest", "missed", skipped)
		}
		fireAt := last
		if r.opts.OnFire != nil {
			r.opts.OnFire(fireAt)
		}
		r.wg.Go(func() {
			if err := r.deliver(ctx, fireAt); err != nil && ctx.Err() == nil {
				r.logger.Error("scheduled invocation failed after retries", "error", err, "time", fireAt)
			}
		})
	}
}

// FireNow delivers one event now, with the retry policy, and returns when
// the function has accepted it or the retries are exhausted (the last
// error, a *FunctionError when the function failed). The event's time is the
// clock's current time. It works whether or not Run is running or the
// schedule is enabled.
func (r *Runner) FireNow(ctx context.Context) error {
	return r.deliver(ctx, r.clock.Now())
}

// scheduleNow converts the clock's time to schedule time.
func (r *Runner) scheduleNow(start time.Time) time.Time {
	elapsed := r.clock.Now().Sub(start)
	return start.Add(time.Duration(float64(elapsed) * r.speed))
}

// realDuration converts a schedule-time span to clock time, rounding up so
// that a wait never ends before the fire time.
func (r *Runner) realDuration(d time.Duration) time.Duration {
	return time.Duration(math.Ceil(float64(d) / r.speed))
}

// deliver invokes the function with the event for fire time t, retrying
// failures per the retry policy.
func (r *Runner) deliver(ctx context.Context, t time.Time) error {
	r.count(func(s *Stats) { s.Fires++ })
	payload, err := r.payload(t)
	if err != nil {
		r.count(func(s *Stats) { s.Failed++ })
		return err
	}
	delay := retryDelay
	for attempt := 0; ; attempt++ {
		r.count(func(s *Stats) { s.Invocations++ })
		res, err := r.invoker.Invoke(ctx, r.cfg.FunctionName, payload)
		if err == nil && !res.Failed() {
			r.count(func(s *Stats) { s.Delivered++ })
			return nil
		}
		if err != nil {
			err = fmt.Errorf("invoke %s: %w", r.cfg.FunctionName, err)
		} else {
			err = &FunctionError{Function: r.cfg.FunctionName, ErrorInfo: res.Error()}
		}
		if attempt == retryAttempts || ctx.Err() != nil {
			r.count(func(s *Stats) { s.Failed++ })
			return fmt.Errorf("schedule %s: %d attempts: %w", r.cfg.Name, attempt+1, err)
		}
		r.logger.Warn("scheduled invocation failed; retrying", "error", err, "retryIn", delay)
		select {
		case <-ctx.Done():
			r.count(func(s *Stats) { s.Failed++ })
			return fmt.Errorf("schedule %s: %w (last error: %w)", r.cfg.Name, ctx.Err(), err)
		case <-r.clock.After(delay):
		}
		delay *= 2
	}
}

// payload is the Input verbatim, or EventBridge's scheduled event.
func (r *Runner) payload(t time.Time) ([]byte, error) {
	if r.cfg.Input != "" {
		return []byte(r.cfg.Input), nil
	}
	b, err := json.Marshal(events.EventBridgeEvent{
		Version:    "0",
		ID:         uuid.NewString(),
		DetailType: "Scheduled Event",
		Source:     "aws.events",
		AccountID:  account,
		Time:       t.UTC().Truncate(time.Second),
		Region:     region,
		Resources:  []string{r.ruleARN},
		Detail:     json.RawMessage("{}"),
	})
	if err != nil {
		return nil, fmt.Errorf("encode scheduled event: %w", err)
	}
	return b, nil
}

func (r *Runner) count(update func(*Stats)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	update(&r.stats)
}
