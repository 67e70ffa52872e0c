package notifier

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clubdev/club/internal/mail"
)

// ErrCircuitOpen: the provider was not called, because it is down (see
// Breaker). It also matches mail.ErrUnavailable, so it is transient and the
// notification stays pending.
var ErrCircuitOpen = errors.New("mail provider circuit open")

// Breaker keeps pending mail from hammering a provider that is down.
//
// With the retry budget in time (hours), every pending mail comes back every
// few seconds to 30 s. Without a breaker each of those deliveries would call
// the provider: 1,000 pending mails would be about 4,000 calls a minute to a
// provider that answers none of them. The breaker opens after Threshold
// consecutive failures that say the provider is down (5xx, no connection,
// no answer); while it is open a send fails at once with ErrCircuitOpen and
// the message is retried with its backoff as before, except for one send
// every ProbeInterval, the probe, which goes to the provider. The probe's
// success closes the breaker and the next deliveries send; its failure
// keeps it open for another interval. A rate limit (429) or a rejection is
// an answer: the provider is up, and they count as successes here.
//
// Some calls say nothing about the provider, and change nothing: a call
// whose caller's context ended (cancelled, or its deadline passed: the
// invocation ran out of time, not the provider) and a call that panicked.
// If such a call was the probe, the next send may probe at once, so a panic
// or a cancelled probe never leaves the breaker refusing every send.
//
// What the pending mail does meanwhile is the handler's business (see
// Handler): with a parking queue, a mail the breaker refuses waits there
// for free; the mail whose failure opened the breaker and each failed
// probe's come back when the next probe is due (NextProbeIn), and so does
// the first mail refused while the probe is in flight, its stand-in
// (RefusedDuringProbe), so that mail keeps probing; and the breaker's
// closing says when to release the parked mail (TakeRelease).
// A caller that must not spend anything on a mail the breaker would refuse
// asks first (Admit) and sends with the pass it gets.
//
// The breaker lives in the function instance, not in a shared store: it
// costs no request on the hot path, and the pressure on a dead provider is
// bounded by the notifier's concurrency (MaximumConcurrency instances, one
// probe each per interval), whatever the backlog. It is safe for
// concurrent use.
type Breaker struct {
	Next Mailer
	// Threshold is how many consecutive failures open the breaker
	// (default 5).
	Threshold int
	// ProbeInterval is the time between probes while open (default 5 s).
	ProbeInterval time.Duration
	// ReleaseEvery is how often, while the provider answers, the mail
	// parked by any instance is looked for (default 1 minute); see
	// TakeRelease.
	ReleaseEvery time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time

	mu       sync.Mutex
	failures int       // consecutive failures while closed
	open     bool      // the provider is considered down
	nextOpen time.Time // while open: when the next probe may go
	probing  bool      // a probe is in flight
	standIn  bool      // a send refused during the probe in flight was named its stand-in
	lastErr  error     // the failure that opened it, or the last probe's
	openedAt time.Time
	calls    int64 // calls that reached the provider
	blocked  int64 // sends refused while open
	// releaseDue: the provider answered and parked mail may wait (see
	// TakeRelease); released is when it was last taken.
	releaseDue bool
	released   time.Time
}

var _ Mailer = (*Breaker)(nil)

// Defaults of Breaker.
const (
	DefaultBreakerThreshold = 5
	DefaultProbeInterval    = 5 * time.Second
	DefaultReleaseEvery     = time.Minute
)

// Send calls Next unless the breaker is open and it is not time for a probe.
// A panic in Next is passed on after the breaker is settled. If ctx carries
// a Pass of this breaker (WithPass) not used yet, the send uses it instead
// of asking again.
//
// A failure after which the breaker is open and which decided it (the one
// that opened it, or a failed probe) is wrapped so that NextProbeIn tells
// when the next probe may go: that mail is the one to try then.
func (b *Breaker) Send(ctx context.Context, key string, m mail.Message) (r mail.Receipt, err error) {
	var probe bool
	if p, ok := ctx.Value(passKey{}).(*Pass); ok && p.b == b && !p.used.Swap(true) {
		probe = p.probe
	} else if probe, err = b.admit(); err != nil {
		return mail.Receipt{}, err
	}
	answered := false
	defer func() {
		if !answered { // Next panicked: it says nothing about the provider
			b.settle(probe, silent, nil)
		}
	}()
	r, err = b.Next.Send(ctx, key, m)
	answered = true
	if wait, decided := b.settle(probe, verdictOf(ctx, err), err); decided {
		err = &stillDownError{err: err, wait: wait}
	}
	return r, err
}

// Pass is the breaker's leave for one call to the provider, taken before a
// send's other work: a caller that must not spend anything on a mail the
// breaker would refuse (a write counting the attempt) asks first (Admit),
// then sends with the pass in its context (WithPass), or gives it back
// (Release) if it does not send after all.
type Pass struct {
	b     *Breaker
	probe bool
	used  atomic.Bool
}

// Admit takes a pass for one call, or refuses as Send would, with
// ErrCircuitOpen.
func (b *Breaker) Admit() (*Pass, error) {
	probe, err := b.admit()
	if err != nil {
		return nil, err
	}
	return &Pass{b: b, probe: probe}, nil
}

// Release gives back a pass that was not used: the provider was not called,
// which says nothing about it (a probe's turn goes to the next send). It
// does nothing after the pass was used, so it can be deferred.
func (p *Pass) Release() {
	if p == nil || p.used.Swap(true) {
		return
	}
	p.b.mu.Lock()
	p.b.calls--
	p.b.mu.Unlock()
	p.b.settle(p.probe, silent, nil)
}

type passKey struct{}

// WithPass returns ctx carrying p, for the next Send of p's breaker.
func WithPass(ctx context.Context, p *Pass) context.Context {
	return context.WithValue(ctx, passKey{}, p)
}

// stillDownError is a failure that left the breaker open and decided it
// (see NextProbeIn), or a refusal of the open breaker; duringProbe marks the
// refusal that stands in for the probe in flight (see RefusedDuringProbe).
type stillDownError struct {
	err         error
	wait        time.Duration
	duringProbe bool
}

// RefusedDuringProbe reports, for an error of Send or Admit, whether the
// open breaker refused the mail as the stand-in of its probe in flight,
// and how long until the probe after it may go. That probe may end without
// calling the provider (its pass given back: the mail it was for was
// cancelled or sent already, or a write failed before the send), and then
// it decides nothing and nothing else comes back to probe: the stand-in
// must be the one that does (see Handler). Each probe has one stand-in,
// the first mail refused while it is in flight; the others refused then
// are refused as ordinary mail (NextProbeIn and ErrCircuitOpen only), so
// that a batch refused together does not come back together, probe after
// probe, instead of waiting parked.
func RefusedDuringProbe(err error) (time.Duration, bool) {
	if e, ok := errors.AsType[*stillDownError](err); ok && e.duringProbe {
		return e.wait, true
	}
	return 0, false
}

func (e *stillDownError) Error() string { return e.err.Error() }
func (e *stillDownError) Unwrap() error { return e.err }

// NextProbeIn reports, for an error of Send or Admit after which the
// breaker is open and which decided or met it — a refusal (ErrCircuitOpen),
// the failure that opened it, a failed probe, or a probe that said nothing
// (0: the next probe may go at once) — how long until the breaker lets the
// next probe go.
func NextProbeIn(err error) (time.Duration, bool) {
	if e, ok := errors.AsType[*stillDownError](err); ok {
		return e.wait, true
	}
	return 0, false
}

// TakeRelease reports whether mail parked while a breaker was open should
// be released now, and clears it; the caller releases it, and calls
// ReleaseDue if it could not finish. It is due when this breaker closes
// after being open, and otherwise after a call the provider answered, at
// most once per ReleaseEvery: the first answer an instance sees, and one a
// minute after, so mail parked by an instance that was recycled, or whose
// release was cut short, is released by another.
func (b *Breaker) TakeRelease() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	due := b.releaseDue
	if due {
		b.releaseDue, b.released = false, b.now()
	}
	return due
}

// ReleaseDue marks a release as due: one was cut short, or a mail that
// probes for parked mail was sent (see Handler).
func (b *Breaker) ReleaseDue() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.releaseDue = true
}

// verdict is what a call says about the provider.
type verdict int

const (
	up     verdict = iota // it answered
	down                  // 5xx, no connection, no answer in time
	silent                // nothing: the caller gave up, or the call panicked
)

// verdictOf classifies a call's result. The caller's context decides first:
// once it has ended, a failure is the caller's (a cancelled or timed-out
// invocation), not the provider's. The mail client's own timeout leaves the
// caller's context alive, so a provider that does not answer is down.
func verdictOf(ctx context.Context, err error) verdict {
	switch {
	case err == nil:
		return up
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return silent
	case errors.Is(err, mail.ErrUnavailable) || errors.Is(err, mail.ErrOutcomeUnknown):
		return down
	default:
		return up
	}
}

// admit decides whether a send may call the provider; probe is true for the
// one send let through while open.
func (b *Breaker) admit() (probe bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		b.calls++
		return false, nil
	}
	now := b.now()
	if b.probing || now.Before(b.nextOpen) {
		b.blocked++
		wait := b.nextOpen.Sub(now)
		if b.probing || wait <= 0 {
			wait = b.interval() // the probe in flight decides; the next one is an interval after it
		}
		// One stand-in per probe is enough: should the probe end without
		// a call, that one mail probes next. The others refused meanwhile
		// are refused as when no probe is in flight.
		standIn := b.probing && !b.standIn
		if standIn {
			b.standIn = true
		}
		return false, &stillDownError{wait: wait, duringProbe: standIn, err: fmt.Errorf("send mail: %w since %s, next probe after %s (last failure: %v): %w",
			ErrCircuitOpen, b.openedAt.UTC().Format(time.RFC3339), b.nextOpen.UTC().Format(time.RFC3339), b.lastErr, mail.ErrUnavailable)}
	}
	b.probing, b.standIn = true, false
	b.calls++
	return true, nil
}

// settle records the outcome of a call that reached the provider, with the
// error it returned (nil unless v is down). decided is true when the call
// opened the breaker or was a failed probe; wait is then the time until the
// next probe.
func (b *Breaker) settle(probe bool, v verdict, err error) (wait time.Duration, decided bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probing = false
	}
	switch v {
	case silent:
		// A probe that says nothing leaves the breaker open and the next
		// probe due at once: its mail is still the one to try again.
		return 0, probe && b.open
	case up:
		if b.open || b.released.IsZero() || b.now().Sub(b.released) >= b.releaseEvery() {
			b.releaseDue = true
		}
		b.failures, b.open = 0, false
		return 0, false
	}
	b.lastErr = err
	if probe {
		b.nextOpen = b.now().Add(b.interval())
		return b.interval(), true
	}
	if b.open {
		return 0, false
	}
	b.failures++
	if b.failures >= b.threshold() {
		b.open, b.openedAt, b.nextOpen = true, b.now(), b.now().Add(b.interval())
		return b.interval(), true
	}
	return 0, false
}

// BreakerStats are the breaker's counters since the instance started.
type BreakerStats struct {
	Open bool
	// Calls reached the provider; Blocked were refused while open.
	Calls, Blocked int64
}

// Stats returns the counters.
func (b *Breaker) Stats() BreakerStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return BreakerStats{Open: b.open, Calls: b.calls, Blocked: b.blocked}
}

func (b *Breaker) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

func (b *Breaker) threshold() int {
	if b.Threshold > 0 {
		return b.Threshold
	}
	return DefaultBreakerThreshold
}

func (b *Breaker) releaseEvery() time.Duration {
	if b.ReleaseEvery > 0 {
		return b.ReleaseEvery
	}
	return DefaultReleaseEvery
}

func (b *Breaker) interval() time.Duration {
	if b.ProbeInterval > 0 {
		return b.ProbeInterval
	}
	return DefaultProbeInterval
}
