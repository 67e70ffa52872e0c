package redrive

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"golang.org/x/time/rate"
)

// SQS is the part of *sqs.Client that Run uses.
type SQS interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

var _ SQS = (*sqs.Client)(nil)

// DeadLetterAttributes are the message attributes the consumers add when
// they dead-letter a message (package sqsconsumer). They describe the
// failure, not the event, so a redrive removes them and the message goes
// back as it first arrived.
var DeadLetterAttributes = []string{"dlq_code", "dlq_reason", "source_queue", originalMessageIDAttribute, "receive_count"}

// originalMessageIDAttribute is the dead-letter attribute naming the message
// in the source queue that failed.
const originalMessageIDAttribute = "original_message_id"

// Options bound a redrive.
type Options struct {
	// Batch is how many messages move per receive, send and delete: 1 to 10
	// (default 10).
	Batch int
	// Rate is the most messages per second sent to the source queue; 0 means
	// no limit.
	Rate float64
	// Max is the most messages to move; 0 means until the DLQ is empty.
	Max int
	// Hold is the visibility timeout of the DLQ receives: the longest a
	// message in hand stays hidden if this process dies (default 60 s).
	Hold time.Duration
	// Check, if set, runs before the first batch and then every CheckEvery
	// (default 10 s); an error stops the redrive before the next batch. It
	// is how the caller watches the age of live traffic in the source queue.
	Check      func(ctx context.Context) error
	CheckEvery time.Duration
	// Progress, if set, is called after every batch with the total moved.
	Progress func(moved int)
}

const (
	maxBatch          = 10
	defaultHold       = 60 * time.Second
	defaultCheckEvery = 10 * time.Second
	// batchTimeout bounds one batch in hand, which finishes even after the
	// caller's context is cancelled.
	batchTimeout = 30 * time.Second
	// receiveWait makes each DLQ receive a short long poll: SQS then asks
	// every server, so an empty answer means an empty queue rather than an
	// unlucky sample.
	receiveWait = 1
)

func (o Options) withDefaults() (Options, error) {
	if o.Batch == 0 {
		o.Batch = maxBatch
	}
	if o.Hold == 0 {
		o.Hold = defaultHold
	}
	if o.CheckEvery == 0 {
		o.CheckEvery = defaultCheckEvery
	}
	var errs []error
	if o.Batch < 1 || o.Batch > maxBatch {
		errs = append(errs, fmt.Errorf("batch %d must be between 1 and %d", o.Batch, maxBatch))
	}
	if o.Rate < 0 {
		errs = append(errs, fmt.Errorf("rate %g must not be negative", o.Rate))
	}
	if o.Max < 0 {
		errs = append(errs, fmt.Errorf("max %d must not be negative", o.Max))
	}
	if o.Hold < time.Second {
		errs = append(errs, fmt.Errorf("hold %s must be at least a second", o.Hold))
	}
	return o, errors.Join(errs...)
}

// Result is what a redrive did.
type Result struct {
	// Moved counts messages sent to the source queue and deleted from the DLQ.
	Moved int
	// Drained is true when the DLQ had nothing more to give (apart from
	// messages that came back during the run).
	Drained bool
	// CameBack counts dead letters this run had already moved once and that
	// failed again and returned to the DLQ while it ran. They are not moved
	// a second time: they stay in the DLQ for a person to look at.
	CameBack int
}

// ErrInterrupted is returned (wrapped, with the context's error) when the
// caller's context ends a redrive before it is done.
var ErrInterrupted = errors.New("redrive interrupted")

// Run moves messages from the dead-letter queue dlq back to the source queue
// source, in batches, at most Rate per second, until the DLQ is empty, Max
// messages have moved, Check fails or ctx is cancelled.
//
// Each message is sent to the source first and deleted from the DLQ after:
// a crash between the two leaves a copy in both queues (a duplicate, which
// the consumers' inbox absorbs by event_id), never in neither (a loss). A
// cancelled ctx takes effect between batches: the batch in hand, at most
// Batch messages, is always finished, so an interruption leaves every
// message either moved once or still visible in the DLQ. Running Run again
// continues where it stopped.
//
// Dead-letter attributes (DeadLetterAttributes) are removed; the body and
// every other attribute (type, event_id, ...) go back unchanged. The
// message gets a new message id and SentTimestamp in the source queue.
//
// A message that fails again while the run goes on comes back to the DLQ;
// the run recognises it (by the id it gave it) and leaves it there, hidden
// until the run ends, rather than moving it round in a loop: each run moves
// a message at most once. Result.CameBack counts them.
//
// Two concurrent redrives of the same DLQ share its messages between them
// and move each once. FIFO queues are refused.
func Run(ctx context.Context, c SQS, dlq, source string, o Options) (res Result, err error) {
	if o, err = o.withDefaults(); err != nil {
		return Result{}, fmt.Errorf("redrive: %w", err)
	}
	if isFIFO(dlq) || isFIFO(source) {
		return Result{}, errors.New("redrive: FIFO queues need a message group per message and are not supported")
	}
	limit := rate.Inf
	if o.Rate > 0 {
		limit = rate.Limit(o.Rate)
	}
	m := &mover{c: c, dlq: dlq, source: source, hold: o.Hold, sent: map[string]bool{}, held: map[string]string{}}
	limiter := rate.NewLimiter(limit, o.Batch)

	defer func() {
		res.CameBack = len(m.held)
		if rerr := m.releaseHeld(ctx); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	var lastCheck time.Time
	for o.Max == 0 || res.Moved < o.Max {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("%w after %d messages: %w", ErrInterrupted, res.Moved, err)
		}
		if o.Check != nil && (lastCheck.IsZero() || time.Since(lastCheck) >= o.CheckEvery) {
			if err := o.Check(ctx); err != nil {
				return res, fmt.Errorf("redrive stopped after %d messages: %w", res.Moved, err)
			}
			lastCheck = time.Now()
		}
		n := o.Batch
		if o.Max > 0 {
			n = min(n, o.Max-res.Moved)
		}
		if err := limiter.WaitN(ctx, n); err != nil {
			return res, fmt.Errorf("%w after %d messages: %w", ErrInterrupted, res.Moved, err)
		}
		moved, empty, err := m.moveBatch(ctx, n)
		res.Moved += moved
		if moved > 0 && o.Progress != nil {
			o.Progress(res.Moved)
		}
		if err != nil {
			return res, fmt.Errorf("redrive stopped after %d messages: %w", res.Moved, err)
		}
		if empty {
			res.Drained = true
			break
		}
	}
	return res, nil
}

// mover is one run's state.
type mover struct {
	c           SQS
	dlq, source string
	hold        time.Duration
	// sent holds the message ids this run gave the source queue.
	sent map[string]bool
	// held are messages that came back, by message id, with their latest
	// receipt handle: kept hidden until the run ends, so that the DLQ's
	// receives reach the others.
	held map[string]string
}

// cameBack reports whether a dead letter is one this run already moved: a
// consumer's dead letter names the source message it was in
// (original_message_id), and the redrive policy keeps the message id.
func (m *mover) cameBack(msg types.Message) bool {
	if m.sent[aws.ToString(msg.MessageId)] {
		return true
	}
	orig, ok := msg.MessageAttributes[originalMessageIDAttribute]
	return ok && m.sent[aws.ToString(orig.StringValue)]
}

// releaseHeld makes the messages that came back visible in the DLQ again.
func (m *mover) releaseHeld(ctx context.Context) error {
	if len(m.held) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), batchTimeout)
	defer cancel()
	var msgs []types.Message
	for id, handle := range m.held {
		msgs = append(msgs, types.Message{MessageId: aws.String(id), ReceiptHandle: aws.String(handle)})
	}
	var errs []error
	for start := 0; start < len(msgs); start += maxBatch {
		batch := msgs[start:min(start+maxBatch, len(msgs))]
		errs = append(errs, release(ctx, m.c, m.dlq, batch, allIndexes(len(batch))))
	}
	return errors.Join(errs...)
}

// moveBatch receives up to n messages from the DLQ, sends them to the
// source and deletes the sent ones from the DLQ. It ignores the caller's
// cancellation (see Run): once messages are in hand the batch completes.
func (m *mover) moveBatch(ctx context.Context, n int) (moved int, empty bool, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), batchTimeout)
	defer cancel()

	out, err := m.c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:              aws.String(m.dlq),
		MaxNumberOfMessages:   int32(n),
		VisibilityTimeout:     int32(m.hold / time.Second),
		WaitTimeSeconds:       receiveWait,
		MessageAttributeNames: []string{"All"},
	})
	if err != nil {
		return 0, false, fmt.Errorf("receive from the DLQ: %w", err)
	}
	if len(out.Messages) == 0 {
		return 0, true, nil
	}
	var msgs []types.Message
	for _, msg := range out.Messages {
		if m.cameBack(msg) {
			m.held[aws.ToString(msg.MessageId)] = aws.ToString(msg.ReceiptHandle)
			continue
		}
		msgs = append(msgs, msg)
	}
	if len(msgs) == 0 {
		return 0, false, nil
	}

	entries := make([]types.SendMessageBatchRequestEntry, len(msgs))
	for i, msg := range msgs {
		entries[i] = types.SendMessageBatchRequestEntry{
			Id:                aws.String(strconv.Itoa(i)),
			MessageBody:       msg.Body,
			MessageAttributes: liveAttributes(msg.MessageAttributes),
		}
	}
	sent, err := m.c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(m.source), Entries: entries})
	if err != nil {
		// Nothing was sent as far as we know; if some were, the copies left
		// in the DLQ are duplicates the inbox absorbs on the next redrive.
		return 0, false, errors.Join(
			fmt.Errorf("send to the source queue: %w", err),
			release(ctx, m.c, m.dlq, msgs, allIndexes(len(msgs))))
	}

	var toDelete []types.DeleteMessageBatchRequestEntry
	for _, s := range sent.Successful {
		i, _ := strconv.Atoi(aws.ToString(s.Id))
		m.sent[aws.ToString(s.MessageId)] = true
		toDelete = append(toDelete, types.DeleteMessageBatchRequestEntry{Id: s.Id, ReceiptHandle: msgs[i].ReceiptHandle})
	}
	var errs []error
	var failed []int
	for _, f := range sent.Failed {
		i, _ := strconv.Atoi(aws.ToString(f.Id))
		failed = append(failed, i)
		errs = append(errs, fmt.Errorf("send message %s to the source queue: %s: %s", aws.ToString(msgs[i].MessageId), aws.ToString(f.Code), aws.ToString(f.Message)))
	}
	if len(failed) > 0 {
		errs = append(errs, release(ctx, m.c, m.dlq, msgs, failed))
	}
	if len(toDelete) > 0 {
		del, err := m.c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(m.dlq), Entries: toDelete})
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("delete %d redriven messages from the DLQ (they are in the source queue too; a later redrive delivers them again, and the inbox absorbs that): %w", len(toDelete), err))
		default:
			moved = len(del.Successful)
			for _, f := range del.Failed {
				errs = append(errs, fmt.Errorf("delete redriven message (entry %s) from the DLQ: %s: %s (it is in the source queue too; the inbox absorbs a second delivery)", aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message)))
			}
		}
	}
	return moved, false, errors.Join(errs...)
}

// release makes received messages visible in the DLQ again at once.
func release(ctx context.Context, c SQS, dlq string, msgs []types.Message, indexes []int) error {
	entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(indexes))
	for k, i := range indexes {
		entries[k] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: msgs[i].ReceiptHandle}
	}
	out, err := c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(dlq), Entries: entries})
	if err == nil && len(out.Failed) > 0 {
		err = fmt.Errorf("%d entries failed", len(out.Failed))
	}
	if err != nil {
		return fmt.Errorf("release unsent messages in the DLQ (they reappear when their hold ends): %w", err)
	}
	return nil
}

func allIndexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// liveAttributes are a dead letter's attributes without the dead-letter ones.
func liveAttributes(in map[string]types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	out := make(map[string]types.MessageAttributeValue, len(in))
	for name, v := range in {
		if !isDeadLetterAttribute(name) {
			out[name] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func isDeadLetterAttribute(name string) bool { return slices.Contains(DeadLetterAttributes, name) }

func isFIFO(url string) bool { return strings.HasSuffix(url, ".fifo") }
