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
// jitter over an exponentially growing window, uniformly random in
// [base, min(cap, base·2^(receiveCount−1))], in whole seconds (SQS's
// unit). The floor of one base keeps a failing message from coming straight
// back; the jitter spreads messages that failed together.
func (c *Consumer) Backoff(receiveCount int) time.Duration {
	base, ceiling := c.cfg.BackoffBase, c.cfg.BackoffBase
	for i := 1; i < receiveCount && ceiling < c.cfg.BackoffCap; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, c.cfg.BackoffCap)
	return roundUp(base + c.cfg.Jitter(ceiling-base+1))
}

// afterProvider is the delay for a provider's Retry-After: honoured, capped
// by BackoffCap (docs/principles.md §7.1: a recovered provider is retried within the cap),
// plus up to one base of jitter so that messages throttled together do not
// return together.
func (c *Consumer) afterProvider(retryAfter time.Duration) time.Duration {
	return roundUp(min(retryAfter+c.cfg.Jitter(c.cfg.BackoffBase), c.cfg.BackoffCap))
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
