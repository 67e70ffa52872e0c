package sqsconsumer

import (
	"context"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/clubdev/club/internal/obs"
)

// delay sets the visibility of a message to be retried and returns the
// delay. A failure to set it is logged, not returned: the message then comes
// back after the queue's visibility timeout, later but not lost.
func (c *Consumer) delay(ctx context.Context, r events.SQSMessage, m Message, v Verdict) time.Duration {
	d := c.retryDelay(m, v)
	if err := c.setVisibility(ctx, r, d); err != nil {
		c.log.WarnContext(ctx, "could not set retry delay; the queue's visibility timeout applies", obs.Err(err))
	}
	return d
}

// retryDelay is the delay before a message's next attempt: the provider's
// Retry-After if it asked for one, else the backoff after m.Attempt
// deliveries.
func (c *Consumer) retryDelay(m Message, v Verdict) time.Duration {
	if v.RetryAfter > 0 {
		return c.afterProvider(v.RetryAfter)
	}
	return c.Backoff(m.Attempt)
}

// Backoff is the delay before the delivery after the receiveCount-th: full
// jitter over an exponentially growing window, uniformly random among the
// whole seconds (SQS's unit) in [base, min(cap, base·2^receiveCount)]. The
// floor of one base keeps a failing message from coming straight back; the
// jitter spreads messages that failed together, from the first retry on
// (the first window is [base, 2·base], not a single point).
func (c *Consumer) Backoff(receiveCount int) time.Duration {
	base, ceiling := c.cfg.BackoffBase, 2*c.cfg.BackoffBase
	for i := 1; i < receiveCount && ceiling < c.cfg.BackoffCap; i++ {
		ceiling *= 2
	}
	return c.spread(base, min(ceiling, c.cfg.BackoffCap))
}

// afterProvider is the delay for a provider's Retry-After: honoured, capped
// by BackoffCap (docs/principles.md §7.1: a recovered provider is retried within the cap),
// plus up to one base of jitter so that messages throttled together do not
// return together.
func (c *Consumer) afterProvider(retryAfter time.Duration) time.Duration {
	return c.spread(min(retryAfter, c.cfg.BackoffCap), min(retryAfter+c.cfg.BackoffBase, c.cfg.BackoffCap))
}

// spread is uniformly random among the whole seconds in [lo, hi], lo
// rounded up. Drawing whole seconds, not a duration rounded up afterwards,
// keeps the draw uniform: [1 s, 2 s] rounded up would be 2 s almost always.
func (c *Consumer) spread(lo, hi time.Duration) time.Duration {
	lo = roundUp(lo)
	hi = max(hi.Truncate(time.Second), lo)
	return lo + c.cfg.Jitter(hi-lo+time.Second).Truncate(time.Second)
}

// roundUp rounds d up to whole seconds.
func roundUp(d time.Duration) time.Duration {
	return time.Duration(wholeSeconds(d)) * time.Second
}

// wholeSeconds is d in seconds, rounded up, within SQS's 0..43200.
func wholeSeconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	return min(max(s, 0), 43200)
}
