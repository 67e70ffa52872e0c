package notifier

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/clubdev/club/internal/mail"
)

// PatientMailer waits out the provider's rate limit inside the invocation.
//
// Handing a throttled message back to the queue costs it a receive: behind
// a backlog longer than the provider's rate allows (docs/principles.md §1.8: 6,000 queued
// mails at 100/s), a message would be throttled, returned and received
// again until it reached maxReceiveCount and the dead-letter queue, and the
// whole batch would keep polling the provider as fast as the queue delivers.
// Waiting instead holds the message under its lease (the queue's visibility
// timeout is six function timeouts), so the notifier's concurrency, not the
// queue, paces the sends: the backlog drains at the provider's rate and no
// mail is dead-lettered for being patient.
//
// It waits the Retry-After the provider asked for plus up to a quarter of it
// at random (so the waiting senders come back spread out, not together, and
// the provider's rate stays used),
// and only while the invocation's deadline leaves Margin after the wait;
// otherwise it returns the rate-limit error, which the consumer turns into a
// retry after Retry-After as before. Every attempt uses the same key and
// message. It is safe for concurrent use.
type PatientMailer struct {
	Next Mailer
	// Margin is kept between the end of a wait and the invocation's
	// deadline, for the send and for recording its outcome (at least the
	// mail client's timeout).
	Margin time.Duration
	// Sleep waits d or until ctx ends (default: a timer); Jitter returns a
	// random duration in [0, d) (default math/rand/v2). Tests replace both.
	Sleep  func(ctx context.Context, d time.Duration) error
	Jitter func(d time.Duration) time.Duration
}

var _ Mailer = (*PatientMailer)(nil)

// Send sends through Next, waiting and trying again while the provider
// answers with its rate limit and the deadline allows.
func (p *PatientMailer) Send(ctx context.Context, key string, m mail.Message) (mail.Receipt, error) {
	for {
		r, err := p.Next.Send(ctx, key, m)
		after, ok := mail.RetryAfter(err)
		if !ok || !errors.Is(err, mail.ErrRateLimited) {
			return r, err
		}
		wait := after + p.jitter(after/4)
		deadline, bounded := ctx.Deadline()
		if !bounded || time.Until(deadline) < wait+p.Margin {
			return r, err
		}
		if p.sleep(ctx, wait) != nil {
			return r, err
		}
	}
}

func (p *PatientMailer) jitter(d time.Duration) time.Duration {
	if p.Jitter != nil {
		return p.Jitter(d)
	}
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

func (p *PatientMailer) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
