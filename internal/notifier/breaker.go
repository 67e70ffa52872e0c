package notifier

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
	// Now is the clock (default time.Now).
	Now func() time.Time

	mu       sync.Mutex
	failures int       // consecutive failures while closed
	open     bool      // the provider is considered down
	nextOpen time.Time // while open: when the next probe may go
	probing  bool      // a probe is in flight
	lastErr  error     // the failure that opened it, or the last probe's
	openedAt time.Time
	calls    int64 // calls that reached the provider
	blocked  int64 // sends refused while open
}

var _ Mailer = (*Breaker)(nil)

// Defaults of Breaker.
const (
	DefaultBreakerThreshold = 5
	DefaultProbeInterval    = 5 * time.Second
)

// Send calls Next unless the breaker is open and it is not time for a probe.
// A panic in Next is passed on after the breaker is settled.
func (b *Breaker) Send(ctx context.Context, key string, m mail.Message) (r mail.Receipt, err error) {
	probe, err := b.admit()
	if err != nil {
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
	b.settle(probe, verdictOf(ctx, err), err)
	return r, err
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
		return false, fmt.Errorf("send mail: %w since %s, next probe after %s (last failure: %v): %w",
			ErrCircuitOpen, b.openedAt.UTC().Format(time.RFC3339), b.nextOpen.UTC().Format(time.RFC3339), b.lastErr, mail.ErrUnavailable)
	}
	b.probing = true
	b.calls++
	return true, nil
}

// settle records the outcome of a call that reached the provider, with the
// error it returned (nil unless v is down).
func (b *Breaker) settle(probe bool, v verdict, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probing = false
	}
	switch v {
	case silent:
		return
	case up:
		b.failures, b.open = 0, false
		return
	}
	b.lastErr = err
	if probe {
		b.nextOpen = b.now().Add(b.interval())
		return
	}
	if b.open {
		return
	}
	b.failures++
	if b.failures >= b.threshold() {
		b.open, b.openedAt, b.nextOpen = true, b.now(), b.now().Add(b.interval())
	}
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

func (b *Breaker) interval() time.Duration {
	if b.ProbeInterval > 0 {
		return b.ProbeInterval
	}
	return DefaultProbeInterval
}
