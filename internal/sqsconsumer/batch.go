package sqsconsumer

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/clubdev/club/internal/fault"
)

// BatchHandler handles the messages of a batch together and returns one
// error per message, each classified as a Handler's error is. It must not
// log the errors itself.
type BatchHandler func(ctx context.Context, msgs []Message) []error

// ProcessBatch is Process for a handler that commits a whole batch at once
// (analytics: one transaction for a batch of events). Each message keeps its
// own fault points, classification, dead letter or retry delay, and metrics:
// the messages whose before-commit fault point fails are left out of the
// handler's call, the after-commit point is passed for each message the
// handler succeeded with, and a panicking handler fails every message of
// its call, transiently. A batch from a FIFO queue (messages with a message
// group) is handled as Process handles it, one message per call, so that a
// group's order survives failures.
func (c *Consumer) ProcessBatch(ctx context.Context, ev events.SQSEvent, h BatchHandler) events.SQSEventResponse {
	for _, r := range ev.Records {
		if messageGroup(r) != "" {
			return c.Process(ctx, ev, func(ctx context.Context, m Message) error { return h(ctx, []Message{m})[0] })
		}
	}
	started := c.cfg.Now()
	msgs := make([]Message, len(ev.Records))
	errs := make([]error, len(ev.Records))
	var run []int // indexes of the messages the handler gets
	for i, r := range ev.Records {
		msgs[i] = c.newMessage(r)
		if errs[i] = fault.Inject(messageContext(ctx, msgs[i]), fault.ConsumerBeforeCommit, faultKey(msgs[i])); errs[i] == nil {
			run = append(run, i)
		}
	}
	if len(run) > 0 {
		batch := make([]Message, len(run))
		for j, i := range run {
			batch[j] = msgs[i]
		}
		results := c.runBatch(ctx, ev.Records, run, batch, h)
		for j, i := range run {
			errs[i] = results[j]
			if errs[i] == nil {
				errs[i] = fault.Inject(messageContext(ctx, msgs[i]), fault.ConsumerAfterCommit, faultKey(msgs[i]))
			}
		}
	}
	outcomes := make([]outcome, len(ev.Records))
	for i, r := range ev.Records {
		outcomes[i] = c.settle(messageContext(ctx, msgs[i]), r, msgs[i], started, errs[i])
	}
	c.emitBatchMetrics(ctx, outcomes)
	return response(ev.Records, outcomes)
}

// runBatch calls h with the messages at run, keeping them invisible while it
// runs long (Config.VisibilityTimeout), and turns a panic or a result of the
// wrong length into a transient error for each of them.
func (c *Consumer) runBatch(ctx context.Context, records []events.SQSMessage, run []int, batch []Message, h BatchHandler) (errs []error) {
	if c.cfg.VisibilityTimeout > 0 {
		for _, i := range run {
			stop := c.keepInvisible(ctx, records[i])
			defer stop()
		}
	}
	defer func() {
		if p := recover(); p != nil {
			err := panicked(p)
			errs = make([]error, len(batch))
			for j := range errs {
				errs[j] = err
			}
		}
	}()
	errs = h(ctx, batch)
	if len(errs) != len(batch) {
		err := fmt.Errorf("batch handler returned %d results for %d messages", len(errs), len(batch))
		errs = make([]error, len(batch))
		for j := range errs {
			errs[j] = err
		}
	}
	return errs
}
