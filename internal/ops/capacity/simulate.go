package capacity

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Simulation runs the model as discrete events, with what the arithmetic
// leaves out: Poisson arrivals, a spread of service times over a fixed
// number of workers, and transient failures retried after a delay up to a
// bounded number of attempts, after which a message goes to the DLQ.
type Simulation struct {
	Model
	// Workers is the number of concurrent consumers (default 10). Each
	// takes Workers/Rate seconds per message on average, so together they
	// complete Rate per second.
	Workers int
	// Spread is the coefficient of variation of one message's service time
	// (standard deviation / mean, log-normal; 0: every message takes the
	// mean; default 0.5).
	Spread float64
	// FailureRate is the probability that an attempt fails transiently.
	FailureRate float64
	// MaxAttempts bounds the attempts of one message (default 5), as the
	// queue's maxReceiveCount does.
	MaxAttempts int
	// RetryDelay is how long a failed message stays hidden before it can be
	// tried again: the visibility timeout or the backoff (default 30 s).
	RetryDelay time.Duration
	// Horizon is how much time to simulate (default: twice the model's drain
	// time, at least a minute; an hour when the model never drains).
	Horizon time.Duration
	// Step is the time between two points of the curve (default Horizon/200).
	Step time.Duration
	// Seed makes a run repeatable.
	Seed uint64
}

// Point is the state of the queue at one moment.
type Point struct {
	At       time.Duration `json:"-"`
	Seconds  float64       `json:"t"`
	Waiting  int           `json:"waiting"`   // visible: nobody works on them
	InFlight int           `json:"in_flight"` // a worker has them
	Retrying int           `json:"retrying"`  // failed, hidden until their retry
	Done     int           `json:"done"`
	Dead     int           `json:"dead"`
	// OldestAge is the age in seconds of the oldest waiting message (counted
	// from when it first entered the queue, as SQS's SentTimestamp is).
	OldestAge float64 `json:"oldest_age"`
}

// SimResult is what a simulation saw.
type SimResult struct {
	Curve []Point
	// Drained is true when, within the horizon, no message was left waiting;
	// DrainTime is the first such moment: the model's drain time, measured.
	Drained   bool
	DrainTime time.Duration
	// MaxWait is the longest any message waited before its first attempt:
	// the peak of the oldest message's age, what a user feels. Served in
	// order, it is about Backlog/Rate, well before the queue is empty.
	MaxWait  time.Duration
	Arrived  int // messages that arrived after the start
	Done     int
	Dead     int
	Attempts int
	// Horizon is the simulated time.
	Horizon time.Duration
}

const (
	defaultWorkers     = 10
	defaultSpread      = 0.5
	defaultMaxAttempts = 5
	defaultRetryDelay  = 30 * time.Second
	defaultPoints      = 200
	// maxEvents keeps a mistaken input (a huge arrival rate over a long
	// horizon) from running for minutes.
	maxEvents = 20_000_000
)

func (s Simulation) withDefaults() (Simulation, error) {
	if err := s.Model.Validate(); err != nil {
		return s, err
	}
	if s.Workers == 0 {
		s.Workers = defaultWorkers
	}
	if s.MaxAttempts == 0 {
		s.MaxAttempts = defaultMaxAttempts
	}
	if s.RetryDelay == 0 {
		s.RetryDelay = defaultRetryDelay
	}
	if s.Horizon == 0 {
		if d, ok := s.DrainTime(); ok {
			s.Horizon = max(2*d, time.Minute)
		} else {
			s.Horizon = time.Hour
		}
	}
	if s.Step == 0 {
		s.Step = max(s.Horizon/defaultPoints, time.Millisecond)
	}
	var errs []error
	if s.Workers < 1 {
		errs = append(errs, fmt.Errorf("workers %d must be at least 1", s.Workers))
	}
	if s.Spread < 0 || math.IsNaN(s.Spread) {
		errs = append(errs, fmt.Errorf("spread %g must not be negative", s.Spread))
	}
	if s.FailureRate < 0 || s.FailureRate >= 1 || math.IsNaN(s.FailureRate) {
		errs = append(errs, fmt.Errorf("failure rate %g must be at least 0 and below 1", s.FailureRate))
	}
	if s.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("max attempts %d must be at least 1", s.MaxAttempts))
	}
	if s.RetryDelay < 0 || s.Horizon < 0 || s.Step < 0 {
		errs = append(errs, errors.New("retry delay, horizon and step must not be negative"))
	}
	if expected := (s.Backlog + s.Arrival*s.Horizon.Seconds()) * 3; expected > maxEvents {
		errs = append(errs, fmt.Errorf("about %.0f events to simulate, more than %d: shorten the horizon or scale the numbers down", expected, maxEvents))
	}
	return s, errors.Join(errs...)
}

type eventKind int

const (
	arrive   eventKind = iota // a new message arrives
	complete                  // a worker finishes an attempt
	reappear                  // a failed message becomes visible again
)

type event struct {
	at   float64 // seconds
	kind eventKind
	msg  *message
	seq  int // ties in time keep their order of scheduling
}

type message struct {
	attempts int
	enqueued float64 // seconds
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	if e[i].at != e[j].at {
		return e[i].at < e[j].at
	}
	return e[i].seq < e[j].seq
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// sim is one run's state.
type sim struct {
	cfg     Simulation
	rng     *rand.Rand
	queue   []*message // FIFO of waiting messages; head at index head
	head    int
	idle    int
	pending events
	seq     int
	res     SimResult

	inFlight, retrying int
	mu, sigma          float64 // log-normal service time parameters
}

// Run simulates and returns the curve and what it measured. Runs with the
// same Simulation (Seed included) give the same result.
func (s Simulation) Run() (SimResult, error) {
	cfg, err := s.withDefaults()
	if err != nil {
		return SimResult{}, err
	}
	st := &sim{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), idle: cfg.Workers}
	mean := float64(cfg.Workers) / cfg.Rate
	st.sigma = math.Sqrt(math.Log1p(cfg.Spread * cfg.Spread))
	st.mu = math.Log(mean) - st.sigma*st.sigma/2
	st.res.Horizon = cfg.Horizon

	for range int(math.Round(cfg.Backlog)) {
		st.queue = append(st.queue, &message{})
	}
	if cfg.Arrival > 0 {
		st.schedule(st.rng.ExpFloat64()/cfg.Arrival, arrive, nil)
	}
	st.dispatch(0)
	st.checkDrained(0)

	horizon, step := cfg.Horizon.Seconds(), cfg.Step.Seconds()
	next := 0.0 // the next curve point
	for len(st.pending) > 0 {
		ev := heap.Pop(&st.pending).(event)
		if ev.at > horizon {
			break
		}
		for ; next <= ev.at; next += step {
			st.sample(next)
		}
		st.handle(ev)
		st.dispatch(ev.at)
		st.checkDrained(ev.at)
	}
	for ; next <= horizon+step/2; next += step {
		st.sample(next)
	}
	return st.res, nil
}

func (st *sim) schedule(at float64, kind eventKind, m *message) {
	st.seq++
	heap.Push(&st.pending, event{at: at, kind: kind, msg: m, seq: st.seq})
}

func (st *sim) waiting() int { return len(st.queue) - st.head }

func (st *sim) handle(ev event) {
	switch ev.kind {
	case arrive:
		st.res.Arrived++
		st.queue = append(st.queue, &message{enqueued: ev.at})
		st.schedule(ev.at+st.rng.ExpFloat64()/st.cfg.Arrival, arrive, nil)
	case reappear:
		st.retrying--
		st.queue = append(st.queue, ev.msg)
	case complete:
		st.inFlight--
		st.idle++
		m := ev.msg
		switch {
		case st.rng.Float64() >= st.cfg.FailureRate:
			st.res.Done++
		case m.attempts >= st.cfg.MaxAttempts:
			st.res.Dead++
		default:
			st.retrying++
			st.schedule(ev.at+st.cfg.RetryDelay.Seconds(), reappear, m)
		}
	}
}

// dispatch gives waiting messages to idle workers, oldest first.
func (st *sim) dispatch(now float64) {
	for st.idle > 0 && st.waiting() > 0 {
		m := st.queue[st.head]
		st.queue[st.head] = nil
		st.head++
		st.idle--
		st.inFlight++
		if m.attempts == 0 {
			st.res.MaxWait = max(st.res.MaxWait, seconds(now-m.enqueued))
		}
		m.attempts++
		st.res.Attempts++
		st.schedule(now+st.serviceTime(), complete, m)
	}
	if st.head > 1024 && st.head*2 > len(st.queue) { // reclaim the consumed head
		st.queue = append([]*message(nil), st.queue[st.head:]...)
		st.head = 0
	}
}

func (st *sim) serviceTime() float64 {
	if st.sigma == 0 {
		return math.Exp(st.mu)
	}
	return math.Exp(st.mu + st.sigma*st.rng.NormFloat64())
}

func (st *sim) checkDrained(now float64) {
	if !st.res.Drained && st.waiting() == 0 {
		st.res.Drained, st.res.DrainTime = true, seconds(now)
	}
}

func (st *sim) sample(at float64) {
	p := Point{
		At: seconds(at), Seconds: at,
		Waiting: st.waiting(), InFlight: st.inFlight, Retrying: st.retrying,
		Done: st.res.Done, Dead: st.res.Dead,
	}
	if p.Waiting > 0 {
		p.OldestAge = at - st.oldestWaiting()
	}
	st.res.Curve = append(st.res.Curve, p)
}

// oldestWaiting is the earliest first-enqueue time among waiting messages.
// Without failures the queue is in enqueue order and the head is the oldest;
// a retried message keeps its first enqueue time and rejoins at the back, so
// with failures the whole queue is searched (a few hundred samples per run).
func (st *sim) oldestWaiting() float64 {
	if st.cfg.FailureRate == 0 {
		return st.queue[st.head].enqueued
	}
	oldest := math.Inf(1)
	for _, m := range st.queue[st.head:] {
		oldest = min(oldest, m.enqueued)
	}
	return oldest
}
