package sqsconsumer

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/clubdev/club/internal/obs"
)

// inOrder runs h over records, concurrently up to Config.Concurrency, but
// the messages of one FIFO message group one after another in batch order:
// once one of them fails, the rest of its group is held back (holdBack)
// without running. It returns each record's outcome, by index.
func (c *Consumer) inOrder(ctx context.Context, records []events.SQSMessage, h Handler) []outcome {
	outcomes := make([]outcome, len(records))
	sem := make(chan struct{}, c.cfg.Concurrency)
	var wg sync.WaitGroup
	for _, group := range groups(records) {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var failure *outcome
			for _, i := range group {
				if failure != nil {
					outcomes[i] = c.holdBack(ctx, records[i], failure.retryIn)
					continue
				}
				outcomes[i] = c.processOne(ctx, records[i], h)
				if outcomes[i].failed {
					failure = &outcomes[i]
				}
			}
		})
	}
	wg.Wait()
	return outcomes
}

// groups splits records into runs that must be handled in order: one per
// FIFO message group (in batch order), and one per message without a group.
func groups(records []events.SQSMessage) [][]int {
	var out [][]int
	byGroup := map[string]int{} // group id → index in out
	for i, r := range records {
		g := messageGroup(r)
		if g == "" {
			out = append(out, []int{i})
			continue
		}
		if j, ok := byGroup[g]; ok {
			out[j] = append(out[j], i)
			continue
		}
		byGroup[g] = len(out)
		out = append(out, []int{i})
	}
	return out
}

// holdBack reports a FIFO message that follows a failed one of its group
// without handling it, and makes it visible again together with the failed
// one, so the group resumes in order after the same delay.
func (c *Consumer) holdBack(ctx context.Context, r events.SQSMessage, retryIn time.Duration) outcome {
	if err := c.setVisibility(ctx, r, retryIn); err != nil {
		c.log.WarnContext(ctx, "could not set retry delay of a held-back message; the queue's visibility timeout applies",
			slog.String("message_id", r.MessageId), obs.Err(err))
	}
	return outcome{failed: true, verdict: Verdict{Action: Retry}, retryIn: retryIn}
}
