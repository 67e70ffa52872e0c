package sqsconsumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/clubdev/club/internal/fault"
	"github.com/clubdev/club/internal/obs"
)

// SQS is the part of *sqs.Client the consumer uses.
type SQS interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

var _ SQS = (*sqs.Client)(nil)

// Handler handles one message. Its error is classified by Classify; it must
// not log the error itself (the consumer logs every failure once).
type Handler func(ctx context.Context, m Message) error

// Consumer runs a Handler over the messages of SQS event batches and turns
// each result into an acknowledgement, a retry with backoff or a dead letter
// with a reason. It is safe for concurrent use.
type Consumer struct {
	cfg Config
	sqs SQS
	log *slog.Logger
}

// New checks cfg and returns a Consumer. log receives one line per failed,
// retried or dead-lettered message (nil means slog.Default()).
func New(cfg Config, client SQS, log *slog.Logger) (*Consumer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if client == nil {
		return nil, errors.New("sqsconsumer: nil SQS client")
	}
	if log == nil {
		log = slog.Default()
	}
	return &Consumer{cfg: cfg.withDefaults(), sqs: client, log: log}, nil
}

// outcome is what happened to one message.
type outcome struct {
	verdict Verdict
	// failed: the message is reported in batchItemFailures (a Retry, a
	// dead letter that could not be sent, or a FIFO message skipped after an
	// earlier failure in its group).
	failed bool
	// deadLettered: the message was sent to the dead-letter queue.
	deadLettered bool
	// requeued: a delayed copy was sent for the retry (Config.RetryBudget)
	// and the received message is acknowledged.
	requeued bool
	// parked: the copy went to the parking queue (see Park).
	parked bool
	// retryIn is the visibility timeout set on a failed message.
	retryIn   time.Duration
	queueWait time.Duration
}

// Process handles every message of ev with h and returns the partial batch
// response: the ids of the messages to deliver again. It never fails as a
// whole; each message is classified on its own (see Classify):
//
//   - Ack: left out of the response (the event source mapping deletes it);
//   - Retry: in the response, and its visibility timeout set to the backoff
//     delay (ChangeMessageVisibility), so it comes back after that delay;
//   - DeadLetter: sent to the dead-letter queue with attributes dlq_code,
//     dlq_reason, source_queue, original_message_id and receive_count plus
//     its own string attributes, then left out of the response. If that send
//     fails the message is retried instead, so it is never lost.
//
// Messages run concurrently up to Config.Concurrency, except that messages of
// one FIFO message group run one after another in batch order, and once one
// of them fails the rest of its group is reported without being handled and
// comes back after the same delay, so order within the group is kept. A
// panicking handler fails its message transiently; the others are
// unaffected.
func (c *Consumer) Process(ctx context.Context, ev events.SQSEvent, h Handler) events.SQSEventResponse {
	outcomes := c.inOrder(ctx, ev.Records, h)
	c.emitBatchMetrics(ctx, outcomes)
	return response(ev.Records, outcomes)
}

// response is the partial batch response: the messages reported failed, in
// batch order (as the event source mapping expects for FIFO queues).
func response(records []events.SQSMessage, outcomes []outcome) events.SQSEventResponse {
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i, o := range outcomes {
		if o.failed {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: records[i].MessageId})
		}
	}
	return resp
}

// processOne runs h on one message between its fault points and settles
// the result.
func (c *Consumer) processOne(ctx context.Context, r events.SQSMessage, h Handler) outcome {
	m := c.newMessage(r)
	ctx = messageContext(ctx, m)
	started := c.cfg.Now()
	return c.settle(ctx, r, m, started, c.runWithFaults(ctx, r, m, h, faultKey(m)))
}

// messageContext carries the message's ids into its log lines.
func messageContext(ctx context.Context, m Message) context.Context {
	attrs := []slog.Attr{slog.String("message_id", m.ID)}
	if eventID := m.Attribute(AttrEventID); eventID != "" {
		attrs = append(attrs, obs.EventID(eventID))
	}
	return obs.WithAttrs(ctx, attrs...)
}

// faultKey keys a message's fault points: its event id, else its message id.
func faultKey(m Message) string { return cmp.Or(m.Attribute(AttrEventID), m.ID) }

// settle classifies the handler's result for one message whose handling
// started at started, and does what the verdict says: nothing (ack), a dead
// letter (deadletter.go) or a retry (retry.go).
func (c *Consumer) settle(ctx context.Context, r events.SQSMessage, m Message, started time.Time, err error) outcome {
	var o outcome
	switch v := c.verdict(m, err); v.Action {
	case DeadLetter:
		o = c.toDeadLetter(ctx, r, m, v, err)
	case Retry:
		if v.Park {
			o = c.toParking(ctx, r, m, v, err)
		} else {
			o = c.toRetry(ctx, r, m, v, err)
		}
	default:
		if v.Duplicate {
			c.log.DebugContext(ctx, "duplicate delivery acknowledged", obs.Err(err))
		}
		o = outcome{verdict: v}
	}
	if !m.SentAt.IsZero() {
		o.queueWait = max(started.Sub(m.SentAt), 0)
	}
	return o
}

// verdict is Classify's verdict on err, except that a transient failure of
// a message's last attempt is dead-lettered: retries_exhausted, or
// retry_deadline_passed when its retry budget (Config.RetryBudget) ends.
func (c *Consumer) verdict(m Message, err error) Verdict {
	v := Classify(err)
	if v.Action != Retry || !m.LastAttempt {
		return v
	}
	code := CodeRetriesExhausted
	if !m.Deadline.IsZero() && !c.cfg.Now().Add(c.cfg.BackoffCap).Before(m.Deadline) {
		code = CodeRetryDeadlinePassed
	}
	return Verdict{Action: DeadLetter, Code: code}
}

// runWithFaults is run between the consumer's fault points (package fault):
// after receive and before the handler commits anything, and after it
// committed and before the message is acknowledged. Both are keyed by the
// event id, else the message id.
func (c *Consumer) runWithFaults(ctx context.Context, r events.SQSMessage, m Message, h Handler, key string) error {
	if err := fault.Inject(ctx, fault.ConsumerBeforeCommit, key); err != nil {
		return err
	}
	if err := c.run(ctx, r, m, h); err != nil {
		return err
	}
	return fault.Inject(ctx, fault.ConsumerAfterCommit, key)
}

// run calls h, turning a panic into a transient error and keeping the
// message invisible while h runs long (Config.VisibilityTimeout).
func (c *Consumer) run(ctx context.Context, r events.SQSMessage, m Message, h Handler) (err error) {
	if c.cfg.VisibilityTimeout > 0 {
		stop := c.keepInvisible(ctx, r)
		defer stop()
	}
	defer func() {
		if p := recover(); p != nil {
			err = panicked(p)
		}
	}()
	return h(ctx, m)
}

// panicked is the transient error a panicking handler fails its messages
// with, with the stack of the panic.
func panicked(p any) error {
	return fmt.Errorf("handler panicked: %v\n%s", p, debug.Stack())
}
