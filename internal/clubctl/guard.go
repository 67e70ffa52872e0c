package clubctl

import (
	"context"
	"fmt"
	"time"

	"github.com/clubdev/club/internal/ops/queues"
)

// localAges is the local cloud's record of queue ages, which it reads
// without receiving anything, unless the stack is not local or a peek was
// asked for.
func localAges(t *target, peek bool) *queues.LocalAges {
	if peek || !IsLocal(t.stack) {
		return nil
	}
	return &queues.LocalAges{Endpoint: t.stack.Endpoint}
}

// ageGuard returns a check that refuses (RefusedError) while the oldest
// message of q is older than q's work class allows: extra messages would
// make live traffic that is already late later still (docs/principles.md §1.18: watch the
// age of normal traffic while replaying). It also refuses when the age
// cannot be told at all. Redrive and replay call it before they start and
// again while they run.
func (g *Globals) ageGuard(t *target, q queues.Queue, peek bool) func(context.Context) error {
	prober := &queues.AgeProber{SQS: t.sqs, CloudWatch: g.clients.cloudWatch(t.aws), Local: localAges(t, peek), Peek: peek, Now: g.Now}
	return func(ctx context.Context) error {
		if q.Class == nil {
			return nil // no class, no age limit
		}
		d, err := queues.GetDepth(ctx, t.sqs, q.URL)
		if err != nil {
			return err
		}
		age, err := prober.OldestAge(ctx, q.URL, d)
		if err != nil {
			return err
		}
		if age.Source == queues.AgeInFlight {
			return nil
		}
		if !age.Known() {
			return &RefusedError{Reason: fmt.Sprintf("cannot tell how old %s's oldest message is (%s); pass --peek to measure it, or --force to go ahead without knowing", q.Name, age.Note)}
		}
		if q.Breaches(age.Oldest) {
			return &RefusedError{Reason: fmt.Sprintf("%s's oldest message is %s old, over the %s class limit of %s: live traffic is already late and more messages would make it later; find the cause and let the queue catch up, or pass --force",
				q.Name, age.Oldest.Round(time.Second), q.Class.Name, q.Class.MaxAge)}
		}
		return nil
	}
}
