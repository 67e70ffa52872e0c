package clubctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/console"
	"github.com/clubdev/club/internal/ops/cwmetric"
	"github.com/clubdev/club/internal/ops/locate"
	"github.com/clubdev/club/internal/ops/queues"
	"github.com/clubdev/club/internal/ops/reconcile"
)

// consoleSource answers the console with the commands' own code: each
// answer is the command's --json document.
type consoleSource struct {
	g               *Globals
	t               *target
	by              string
	peek            bool
	providerTimeout time.Duration
}

var _ console.Source = (*consoleSource)(nil)

// consoleError maps the commands' errors onto the console's answers.
func consoleError(err error) error {
	var usage *UsageError
	var refused *RefusedError
	var missing *notFoundError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &usage):
		return console.Invalid(err)
	case errors.As(err, &refused):
		return console.Refused(errors.New(refused.Reason))
	case errors.As(err, &missing), errors.Is(err, queues.ErrUnknownQueue), errors.Is(err, club.ErrNotFound):
		return console.NotFound(err)
	}
	return err
}

func (s *consoleSource) Status(ctx context.Context) (any, error) {
	// No drain sample (the charts show the trend) and no peek: a page that
	// refreshes must not receive messages.
	r, err := s.g.collectStatus(ctx, s.t, statusOptions{peekLimit: 100}, false)
	if err != nil {
		return nil, err
	}
	return statusJSON(r, 0), nil
}

func (s *consoleSource) Gauges(ctx context.Context) (any, error) {
	r, err := s.g.collectStatus(ctx, s.t, statusOptions{peekLimit: 100, gaugesOnly: true}, false)
	if err != nil {
		return nil, err
	}
	return statusJSON(r, 0), nil
}

func (s *consoleSource) DeadLetterQueues(ctx context.Context) (any, error) {
	out, err := s.g.dlqSummaries(ctx, s.t)
	if out == nil {
		out = []dlqSummary{}
	}
	return out, consoleError(err)
}

// consoleLetter is a dead letter as the page shows it: masked, with the
// times it has.
type consoleLetter struct {
	deadLetter
	// Attempts is the receive count the consumer recorded when it gave up
	// (its receive_count attribute; the DLQ's own count otherwise).
	Attempts int `json:"attempts"`
	// OccurredAt is the event's time (the body's occurred_at): the consumers
	// record no first failure, and the event cannot have failed before it
	// occurred.
	OccurredAt *time.Time `json:"occurred_at"`
	// DeadLetteredAt is when the consumer gave up: the last failure.
	DeadLetteredAt time.Time `json:"dead_lettered_at"`
}

func (s *consoleSource) DeadLetters(ctx context.Context, name string, max int) (any, error) {
	q, letters, err := s.g.deadLetters(ctx, s.t, name, max)
	if err != nil {
		return nil, consoleError(err)
	}
	out := make([]consoleLetter, 0, len(letters))
	for _, l := range letters {
		cl := consoleLetter{deadLetter: l, Attempts: l.ReceiveCount, DeadLetteredAt: l.SentAt}
		if n, err := fmt.Sscan(l.Attributes["receive_count"], &cl.Attempts); n != 1 || err != nil {
			cl.Attempts = l.ReceiveCount
		}
		if t := occurredAt(l.Body); !t.IsZero() {
			cl.OccurredAt = &t
		}
		cl.Body, cl.Reason, cl.Attributes = console.MaskText(l.Body), console.MaskText(l.Reason), console.MaskAttributes(l.Attributes)
		out = append(out, cl)
	}
	return map[string]any{"queue": q.Name, "dlq": q.DLQName, "letters": out}, nil
}

// occurredAt reads an event body's occurred_at.
func occurredAt(body string) time.Time {
	_, rest, ok := strings.Cut(body, `"occurred_at":"`)
	if !ok {
		return time.Time{}
	}
	v, _, _ := strings.Cut(rest, `"`)
	t, _ := time.Parse(time.RFC3339Nano, v)
	return t.UTC()
}

func (s *consoleSource) Purchases(ctx context.Context) (any, error) {
	now, items, err := s.g.reconcileItems(ctx, reconcile.Statuses, 0, s.providerTimeout)
	if err != nil {
		return nil, consoleError(err)
	}
	return reconcileJSON(now, items), nil
}

type historyJS struct {
	Status string    `json:"status"`
	At     time.Time `json:"at"`
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
}

type purchaseJS struct {
	PurchaseID    string      `json:"purchase_id"`
	IntensiveID   string      `json:"intensive_id"`
	StudentID     string      `json:"student_id"`
	Status        string      `json:"status"`
	CreatedAt     time.Time   `json:"created_at"`
	HoldExpiresAt time.Time   `json:"hold_expires_at"`
	PaymentID     string      `json:"payment_id,omitempty"`
	PaymentKey    string      `json:"payment_key"`
	PaymentStatus string      `json:"recorded_payment_status,omitempty"`
	LatePayment   bool        `json:"late_payment"`
	RefundID      string      `json:"refund_id,omitempty"`
	RefundKey     string      `json:"refund_key"`
	RefundStatus  string      `json:"recorded_refund_status,omitempty"`
	Note          string      `json:"note,omitempty"`
	History       []historyJS `json:"history"`
	// Reconcile is the purchase's line of clubctl reconcile, when a person
	// must look at it: what the provider says now and the next step.
	Reconcile *reconcilePurchaseJS `json:"reconcile,omitempty"`
	Actions   []string             `json:"actions"`
}

func (s *consoleSource) Purchase(ctx context.Context, id string) (any, error) {
	adapters, _, err := s.g.purchaseAdapters(ctx)
	if err != nil {
		return nil, err
	}
	p, err := adapters.Purchases.Get(ctx, id)
	if err != nil {
		return nil, consoleError(err)
	}
	out := purchaseJS{
		PurchaseID: p.ID(), IntensiveID: p.IntensiveID(), StudentID: p.StudentID(), Status: string(p.Status()),
		CreatedAt: p.CreatedAt().UTC(), HoldExpiresAt: p.HoldExpiresAt().UTC(),
		PaymentID: p.PaymentID(), PaymentKey: p.PaymentKey(), PaymentStatus: string(p.PaymentStatus()), LatePayment: p.LatePayment(),
		RefundID: p.RefundID(), RefundKey: p.RefundKey(), RefundStatus: string(p.RefundStatus()), Note: p.Note(),
		History: []historyJS{}, Actions: []string{},
	}
	for _, h := range p.History() {
		out.History = append(out.History, historyJS{Status: string(h.Status), At: h.At.UTC(), By: h.By, Reason: h.Reason})
	}
	if slices.Contains(reconcile.Statuses, p.Status()) {
		now, items, err := s.g.reconcileItems(ctx, []purchase.Status{p.Status()}, 0, s.providerTimeout)
		if err != nil {
			return nil, err
		}
		for _, it := range reconcileJSON(now, items).Purchases {
			if it.PurchaseID == id {
				out.Reconcile = &it
			}
		}
	}
	if p.Status() == purchase.StatusNeedsReconciliation {
		for _, a := range purchase.Actions() {
			out.Actions = append(out.Actions, string(a))
		}
	}
	return out, nil
}

func (s *consoleSource) Resolve(ctx context.Context, r console.Resolution) (any, error) {
	out, err := s.g.resolvePurchase(ctx, r.PurchaseID, resolveOptions{action: r.Action, reason: r.Reason, by: r.By, force: r.Force})
	if err != nil {
		return nil, consoleError(err)
	}
	return out, nil
}

func (s *consoleSource) Find(ctx context.Context, id string) (any, error) {
	f := &locate.Finder{
		DB: s.t.dynamoDB(), ClubTable: s.t.stack.Tables["ClubTable"], OutboxTable: s.t.stack.Tables["OutboxTable"],
		SQS: s.t.sqs, Catalog: s.t.catalog, PeekLive: s.peek, PeekLimit: dlqPeekLimit, Now: s.g.Now,
	}
	if arn := s.t.stack.Outputs["PurchaseStateMachineArn"]; arn != "" {
		f.Executions = sfnExecutions{client: sfn.NewFromConfig(s.t.aws), machine: arn}
		f.ExecutionNames = func(id string) []string {
			return []string{purchase.ExecutionName(id), purchase.RefundExecutionName(id)}
		}
	}
	r, err := f.Find(ctx, id)
	if err != nil {
		return nil, console.Invalid(err)
	}
	for i := range r.Places {
		r.Places[i].Detail = console.MaskMap(r.Places[i].Detail)
	}
	return r, nil
}

// Capacity runs clubctl capacity --simulate --json itself with the page's
// numbers: the same flags, defaults, checks and output.
func (s *consoleSource) Capacity(ctx context.Context, q url.Values) (any, error) {
	args := []string{"capacity", "--simulate", "--json", "--rows", "2"}
	for _, name := range []string{"backlog", "arrival", "rate", "deadline", "workers", "failure-rate"} {
		if v := strings.TrimSpace(q.Get(name)); v != "" {
			args = append(args, "--"+name, v)
		}
	}
	var stdout, stderr bytes.Buffer
	sub := newGlobals(&stdout, &stderr)
	sub.Now = s.g.Now
	switch execute(ctx, sub, args) {
	case 0:
		return rawJSON(stdout.Bytes()), nil
	case 2:
		msg, _, _ := strings.Cut(strings.TrimPrefix(stderr.String(), "clubctl: "), "\n")
		return nil, console.Invalid(errors.New(msg))
	default:
		return nil, errors.New(strings.TrimSpace(stderr.String()))
	}
}

// rawJSON is a JSON document passed through as it is.
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }

func (s *consoleSource) PlanRedrive(ctx context.Context, r console.RedriveRequest) (console.RedrivePlan, error) {
	// Batches no larger than a second's worth at the rate cap: the limiter
	// lets a whole batch through at once, and the progress bar should move
	// every second, not every ten.
	batch := 10
	if r.Rate > 0 {
		batch = min(10, max(1, int(math.Ceil(r.Rate))))
	}
	o := dlqRedriveOptions{queue: r.Queue, batch: batch, max: r.Max, force: r.Force}
	plan, err := s.g.planRedrive(ctx, s.t, o, r.Rate, false)
	if err != nil {
		return console.RedrivePlan{}, consoleError(err)
	}
	if plan.total == 0 {
		return console.RedrivePlan{}, console.Refused(fmt.Errorf("%s is empty: nothing to redrive", plan.queue.DLQName))
	}
	// The same check the command makes before it starts.
	if check := plan.opts.Check; check != nil {
		if err := check(ctx); err != nil {
			return console.RedrivePlan{}, consoleError(err)
		}
	}
	return console.RedrivePlan{
		Queue: plan.queue.Name, DLQ: plan.queue.DLQName, ToMove: plan.total,
		Run: func(ctx context.Context, progress func(int)) (int, error) {
			res, err := plan.run(ctx, s.t, progress)
			return res.Moved, err
		},
	}, nil
}

// PastHour reads the hour before now from CloudWatch's one-minute metrics
// (depth, in flight, age of the oldest message and DLQ depth of every
// queue; iterator age of every function). The local cloud publishes no
// service metrics: there the charts start with the console.
func (s *consoleSource) PastHour(ctx context.Context) ([]console.Sample, error) {
	if IsLocal(s.t.stack) {
		return nil, nil
	}
	type ref struct {
		set func(*console.Sample, float64)
	}
	var queries []cwmetric.Query
	var refs []ref
	add := func(q cwmetric.Query, r ref) { queries, refs = append(queries, q), append(refs, r) }
	for _, q := range s.t.catalog.Queues() {
		name := q.Name
		queueSample := func(p *console.Sample, f func(*console.QueueSample)) {
			qs := p.Queues[name]
			f(&qs)
			p.Queues[name] = qs
		}
		add(cwmetric.QueueVisible(queues.NameOf(q.URL)), ref{set: func(p *console.Sample, v float64) {
			queueSample(p, func(qs *console.QueueSample) { qs.Visible = int64(v) })
		}})
		add(cwmetric.QueueInFlight(queues.NameOf(q.URL)), ref{set: func(p *console.Sample, v float64) {
			queueSample(p, func(qs *console.QueueSample) { qs.InFlight = int64(v) })
		}})
		add(cwmetric.QueueAge(queues.NameOf(q.URL)), ref{set: func(p *console.Sample, v float64) {
			queueSample(p, func(qs *console.QueueSample) { qs.Age = &v })
		}})
		if q.DLQURL != "" {
			add(cwmetric.QueueVisible(queues.NameOf(q.DLQURL)), ref{set: func(p *console.Sample, v float64) {
				n := int64(v)
				queueSample(p, func(qs *console.QueueSample) { qs.DLQ = &n })
			}})
		}
	}
	for _, fn := range slices.Sorted(maps.Values(s.t.stack.Functions)) {
		add(cwmetric.IteratorAge(fn), ref{set: func(p *console.Sample, v float64) {
			seconds := v / 1000 // milliseconds
			p.Streams[fn] = console.StreamSample{Age: &seconds}
		}})
	}
	now := s.g.Now()
	series, err := cwmetric.Series(ctx, s.g.clients.cloudWatch(s.t.aws), now.Add(-time.Hour), now, queries)
	if err != nil {
		return nil, err
	}
	byMinute := map[time.Time]*console.Sample{}
	for i, points := range series {
		for _, pt := range points {
			at := pt.At.UTC()
			p := byMinute[at]
			if p == nil {
				p = &console.Sample{At: at, Queues: map[string]console.QueueSample{}, Streams: map[string]console.StreamSample{}, Source: "cloudwatch"}
				byMinute[at] = p
			}
			refs[i].set(p, pt.Value)
		}
	}
	out := make([]console.Sample, 0, len(byMinute))
	for _, p := range byMinute {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b console.Sample) int { return a.At.Compare(b.At) })
	return out, nil
}
