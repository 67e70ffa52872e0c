package sqsconsumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/clubdev/club/internal/emf"
	"github.com/clubdev/club/internal/fault"
	"github.com/clubdev/club/internal/obs"
)

// SQS is the part of *sqs.Client the consumer uses.
type SQS interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

var _ SQS = (*sqs.Client)(nil)

// Defaults of Config.
const (
	DefaultBackoffBase = time.Second
	DefaultBackoffCap  = 30 * time.Second
)

// maxDelay is SQS's longest DelaySeconds.
const maxDelay = 15 * time.Minute

// maxMessageAttributes is SQS's limit of message attributes per message.
const maxMessageAttributes = 10

// maxReasonBytes bounds the dlq_reason attribute: enough for any error chain
// worth reading, small beside the 256 KiB message limit.
const maxReasonBytes = 2048

// Config configures a Consumer.
type Config struct {
	// Name names the consumer in logs and metrics (e.g. "notifier").
	Name string
	// QueueURL is the queue the messages come from; visibility changes go
	// to it.
	QueueURL string
	// DLQURL is the queue's dead-letter queue; permanent failures go to it.
	DLQURL string
	// Concurrency bounds how many messages of one batch are handled at once.
	// The default, 1, handles them one after another in batch order. Use
	// more only when the handler's effects do not depend on order. Messages
	// of one FIFO message group are always handled one after another.
	Concurrency int
	// BackoffBase and BackoffCap shape the delay before a transient failure
	// is retried (defaults DefaultBackoffBase, DefaultBackoffCap); see Backoff.
	BackoffBase time.Duration
	BackoffCap  time.Duration
	// MaxReceiveCount is the queue's redrive maxReceiveCount, 0 if unknown.
	// When set, a transient failure of the last allowed delivery is
	// dead-lettered by the consumer with CodeRetriesExhausted and the error
	// as reason, instead of being moved by the redrive policy without one.
	MaxReceiveCount int
	// RetryBudget, when set, bounds a message's retries in time instead of
	// in receives: a transient failure is retried by sending a copy of the
	// message to QueueURL with the backoff as its DelaySeconds, carrying
	// the deadline (AttrRetryDeadline) and the deliveries so far
	// (AttrRetryAttempt), and the received one is acknowledged. Each copy is
	// received once per attempt, so the queue's maxReceiveCount only counts
	// the invocations that died before settling a copy (a crash, a
	// timeout): it stays a backstop, whatever the budget. The deadline is
	// the first copy's SentTimestamp plus RetryBudget; a transient failure
	// whose next retry could come after it is dead-lettered with
	// CodeRetryDeadlinePassed. A dead letter drops both attributes, so a
	// redrive starts a fresh budget. Standard queues only: a delayed copy
	// would break a FIFO group's order.
	RetryBudget time.Duration
	// VisibilityTimeout is the queue's visibility timeout. When set, the
	// consumer keeps extending the visibility of a message whose handler is
	// still running, every half of it, so long work is not delivered to a
	// second consumer meanwhile. 0 disables it: a Lambda consumer whose
	// queue's visibility timeout is at least six function timeouts (docs/principles.md §2)
	// never needs it.
	VisibilityTimeout time.Duration
	// Metrics receives Embedded Metric Format lines (default os.Stdout).
	Metrics io.Writer
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Jitter returns a uniformly random duration in [0, n) (default
	// math/rand/v2.N). Tests make it deterministic.
	Jitter func(n time.Duration) time.Duration
}

func (c Config) validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("sqsconsumer: Name is required"))
	}
	if c.QueueURL == "" {
		errs = append(errs, errors.New("sqsconsumer: QueueURL is required"))
	}
	if c.DLQURL == "" {
		errs = append(errs, errors.New("sqsconsumer: DLQURL is required"))
	}
	if c.QueueURL != "" && c.QueueURL == c.DLQURL {
		errs = append(errs, errors.New("sqsconsumer: QueueURL and DLQURL must differ"))
	}
	if c.Concurrency < 0 || c.MaxReceiveCount < 0 || c.BackoffBase < 0 || c.BackoffCap < 0 || c.VisibilityTimeout < 0 {
		errs = append(errs, errors.New("sqsconsumer: Concurrency, MaxReceiveCount, BackoffBase, BackoffCap and VisibilityTimeout must not be negative"))
	}
	if c.BackoffBase > 0 && c.BackoffCap > 0 && c.BackoffCap < c.BackoffBase {
		errs = append(errs, errors.New("sqsconsumer: BackoffCap must not be below BackoffBase"))
	}
	if c.RetryBudget < 0 {
		errs = append(errs, errors.New("sqsconsumer: RetryBudget must not be negative"))
	}
	if c.RetryBudget > 0 && isFIFO(c.QueueURL) {
		errs = append(errs, errors.New("sqsconsumer: RetryBudget needs a standard queue (a delayed copy would break a FIFO group's order)"))
	}
	if c.RetryBudget > 0 && c.BackoffCap > maxDelay {
		errs = append(errs, fmt.Errorf("sqsconsumer: with RetryBudget, BackoffCap must not exceed %s (SQS's longest DelaySeconds)", maxDelay))
	}
	if c.VisibilityTimeout > 0 && c.VisibilityTimeout < 2*time.Second {
		errs = append(errs, errors.New("sqsconsumer: VisibilityTimeout must be at least 2s (SQS counts whole seconds)"))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.Concurrency == 0 {
		c.Concurrency = 1
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = DefaultBackoffBase
	}
	if c.BackoffCap == 0 {
		c.BackoffCap = max(DefaultBackoffCap, c.BackoffBase)
	}
	if c.Metrics == nil {
		c.Metrics = os.Stdout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Jitter == nil {
		c.Jitter = func(n time.Duration) time.Duration {
			if n <= 0 {
				return 0
			}
			return rand.N(n)
		}
	}
	return c
}

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
	outcomes := make([]outcome, len(ev.Records))
	sem := make(chan struct{}, c.cfg.Concurrency)
	var wg sync.WaitGroup
	for _, group := range groups(ev.Records) {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var failure *outcome
			for _, i := range group {
				if failure != nil {
					outcomes[i] = c.holdBack(ctx, ev.Records[i], failure.retryIn)
					continue
				}
				outcomes[i] = c.processOne(ctx, ev.Records[i], h)
				if outcomes[i].failed {
					failure = &outcomes[i]
				}
			}
		})
	}
	wg.Wait()

	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i, o := range outcomes {
		if o.failed {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
		}
	}
	c.emitBatchMetrics(ctx, outcomes)
	return resp
}

// BatchHandler handles the messages of a batch together and returns one
// error per message, each classified as a Handler's error is. It must not
// log the errors itself.
type BatchHandler func(ctx context.Context, msgs []Message) []error

// ProcessBatch is Process for a handler that commits a whole batch at once
// (the projections: one transaction for ten events). Each message keeps its
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
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i, r := range ev.Records {
		outcomes[i] = c.settle(messageContext(ctx, msgs[i]), r, msgs[i], started, errs[i])
		if outcomes[i].failed {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
		}
	}
	c.emitBatchMetrics(ctx, outcomes)
	return resp
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
			err := fmt.Errorf("handler panicked: %v\n%s", p, debug.Stack())
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
// letter or a retry delay.
func (c *Consumer) settle(ctx context.Context, r events.SQSMessage, m Message, started time.Time, err error) outcome {
	o := outcome{}
	if !m.SentAt.IsZero() {
		o.queueWait = max(started.Sub(m.SentAt), 0)
	}
	o.verdict = Classify(err)
	if o.verdict.Action == Retry && m.LastAttempt {
		code := CodeRetriesExhausted
		if !m.Deadline.IsZero() && !c.cfg.Now().Add(c.cfg.BackoffCap).Before(m.Deadline) {
			code = CodeRetryDeadlinePassed
		}
		o.verdict = Verdict{Action: DeadLetter, Code: code}
	}

	switch o.verdict.Action {
	case Ack:
		if o.verdict.Duplicate {
			c.log.DebugContext(ctx, "duplicate delivery acknowledged", obs.Err(err))
		}
	case DeadLetter:
		if dlqErr := c.deadLetter(ctx, r, m, o.verdict.Code, err); dlqErr != nil {
			// Not lost: retried, and classified again on its next delivery.
			c.log.ErrorContext(ctx, "dead-letter send failed; message will be retried",
				slog.String("dlq_code", o.verdict.Code), obs.Err(errors.Join(err, dlqErr)), slog.Int("receive_count", m.ReceiveCount))
			o.failed = true
			o.retryIn = c.delay(ctx, r, m, Verdict{Action: Retry})
			break
		}
		o.deadLettered = true
		c.log.WarnContext(ctx, "message dead-lettered",
			slog.String("dlq_code", o.verdict.Code), slog.String("dlq_reason", reason(err)), slog.Int("receive_count", m.ReceiveCount))
	case Retry:
		if c.cfg.RetryBudget > 0 {
			d := c.retryDelay(m, o.verdict)
			sendErr := c.requeue(ctx, r, m, d)
			if sendErr == nil {
				o.requeued, o.retryIn = true, d
				c.log.WarnContext(ctx, "message will be retried",
					obs.Err(err), slog.Int("attempt", m.Attempt), slog.Duration("retry_in", d), slog.Time("retry_deadline", m.Deadline))
				break
			}
			// Not lost: the received message comes back after its
			// visibility timeout instead, and counts one more receive.
			c.log.WarnContext(ctx, "could not send the retry's copy; retrying the received message", obs.Err(sendErr))
		}
		o.failed = true
		o.retryIn = c.delay(ctx, r, m, o.verdict)
		c.log.WarnContext(ctx, "message will be retried",
			obs.Err(err), slog.Int("receive_count", m.ReceiveCount), slog.Duration("retry_in", o.retryIn))
	}
	return o
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
			err = fmt.Errorf("handler panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return h(ctx, m)
}

// keepInvisible extends the message's visibility every half visibility
// timeout until stop is called. The first extension comes half a timeout
// after the handler started, which assumes the invocation began soon after
// the message was received (no long batching window).
func (c *Consumer) keepInvisible(ctx context.Context, r events.SQSMessage) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(c.cfg.VisibilityTimeout / 2)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := c.setVisibility(ctx, r, c.cfg.VisibilityTimeout); err != nil && ctx.Err() == nil {
					c.log.WarnContext(ctx, "could not extend visibility of a message in progress", obs.Err(err))
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

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

// requeue sends the copy of a message that carries its retry (see
// Config.RetryBudget): the same body and attributes, the deadline and the
// deliveries so far, visible after d.
func (c *Consumer) requeue(ctx context.Context, r events.SQSMessage, m Message, d time.Duration) error {
	attrs := map[string]types.MessageAttributeValue{
		AttrRetryDeadline: {DataType: aws.String("String"), StringValue: aws.String(m.Deadline.UTC().Format(time.RFC3339Nano))},
		AttrRetryAttempt:  {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(m.Attempt))},
	}
	for _, name := range keptAttributes(r, len(attrs)) {
		if v, ok := copyAttribute(r.MessageAttributes[name]); ok {
			attrs[name] = v
		}
	}
	_, err := c.sqs.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:          aws.String(c.cfg.QueueURL),
		MessageBody:       aws.String(r.Body),
		MessageAttributes: attrs,
		DelaySeconds:      int32(min(wholeSeconds(d), int64(maxDelay/time.Second))),
	})
	if err != nil {
		return fmt.Errorf("send the retry of message %s: %w", m.ID, err)
	}
	return nil
}

// keptAttributes names the original attributes of r a dead letter or a
// retry's copy keeps beside its own ones (of which there are taken): type
// and event_id first, then the others by name, within SQS's limit of 10
// per message, never the retry's own attributes (a redrive starts a fresh
// budget).
func keptAttributes(r events.SQSMessage, taken int) []string {
	names := slices.Sorted(maps.Keys(r.MessageAttributes))
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(keepRank(a), keepRank(b)) })
	var out []string
	for _, name := range names {
		if taken+len(out) == maxMessageAttributes {
			break
		}
		if ourAttribute(name) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// ourAttribute reports whether an attribute is one the consumer sets on a
// dead letter or a retry's copy.
func ourAttribute(name string) bool {
	switch name {
	case AttrDLQCode, AttrDLQReason, AttrSourceQueue, AttrOriginalMessageID, AttrReceiveCount, AttrRetryDeadline, AttrRetryAttempt:
		return true
	}
	return false
}

func (c *Consumer) setVisibility(ctx context.Context, r events.SQSMessage, d time.Duration) error {
	_, err := c.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(c.cfg.QueueURL),
		ReceiptHandle:     aws.String(r.ReceiptHandle),
		VisibilityTimeout: int32(wholeSeconds(d)),
	})
	if err != nil {
		return fmt.Errorf("change visibility of message %s to %s: %w", r.MessageId, d, err)
	}
	return nil
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

// deadLetter sends the original message to the DLQ with the reason.
func (c *Consumer) deadLetter(ctx context.Context, r events.SQSMessage, m Message, code string, cause error) error {
	str := func(v string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	attrs := map[string]types.MessageAttributeValue{
		AttrDLQCode:           str(code),
		AttrDLQReason:         str(reason(cause)),
		AttrSourceQueue:       str(c.cfg.QueueURL),
		AttrOriginalMessageID: str(m.ID),
		AttrReceiveCount:      str(strconv.Itoa(m.Attempt)),
	}
	// Keep the original attributes so that a redrive delivers the message
	// as it was (see keptAttributes).
	for _, name := range keptAttributes(r, len(attrs)) {
		if v, ok := copyAttribute(r.MessageAttributes[name]); ok {
			attrs[name] = v
		}
	}

	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(c.cfg.DLQURL),
		MessageBody:       aws.String(r.Body),
		MessageAttributes: attrs,
	}
	if isFIFO(c.cfg.DLQURL) {
		group := messageGroup(r)
		if group == "" {
			group = "dead-letters"
		}
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(m.ID)
	}
	if _, err := c.sqs.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("send message %s to the dead-letter queue: %w", m.ID, err)
	}
	return nil
}

// keepRank orders the original attributes to keep on a dead letter.
func keepRank(name string) int {
	switch name {
	case AttrType:
		return 0
	case AttrEventID:
		return 1
	default:
		return 2
	}
}

// copyAttribute converts a delivered attribute back into one to send.
func copyAttribute(a events.SQSMessageAttribute) (types.MessageAttributeValue, bool) {
	switch {
	case a.DataType == "":
		return types.MessageAttributeValue{}, false
	case a.StringValue != nil:
		return types.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: a.StringValue}, true
	case a.BinaryValue != nil:
		return types.MessageAttributeValue{DataType: aws.String(a.DataType), BinaryValue: a.BinaryValue}, true
	default:
		return types.MessageAttributeValue{}, false
	}
}

// reason is the dlq_reason text of an error, bounded.
func reason(err error) string {
	if err == nil {
		return ""
	}
	// A provider's error may quote the recipient: dead letters keep no
	// personal data.
	s := obs.RedactText(err.Error())
	if len(s) > maxReasonBytes {
		s = s[:maxReasonBytes-3] + "..."
	}
	return s
}

// Metric names (namespace obs.MetricsNamespace, dimension obs.DimFunction).
const (
	// MetricQueueWait is now − SentTimestamp per message, in milliseconds.
	MetricQueueWait    = "QueueWait"
	MetricAcknowledged = "MessagesAcknowledged"
	MetricDuplicates   = "DuplicateDeliveries"
	MetricRetried      = "MessagesRetried"
	MetricDeadLettered = "MessagesDeadLettered"
)

func (c *Consumer) emitBatchMetrics(ctx context.Context, outcomes []outcome) {
	var waits []time.Duration
	var acked, dups, retried, dead int
	for _, o := range outcomes {
		if o.queueWait > 0 {
			waits = append(waits, o.queueWait)
		}
		switch {
		case o.deadLettered:
			dead++
		case o.failed || o.requeued:
			retried++
		default:
			acked++
			if o.verdict.Duplicate {
				dups++
			}
		}
	}
	err := emf.Entry{
		Namespace:  obs.MetricsNamespace,
		Dimensions: map[string]string{obs.DimFunction: c.cfg.Name},
		Metrics: []emf.Metric{
			emf.Durations(MetricQueueWait, waits...),
			emf.Counter(MetricAcknowledged, acked),
			emf.Counter(MetricDuplicates, dups),
			emf.Counter(MetricRetried, retried),
			emf.Counter(MetricDeadLettered, dead),
		},
		Timestamp: c.cfg.Now(),
	}.Emit(c.cfg.Metrics)
	if err != nil {
		c.log.WarnContext(ctx, "could not emit metrics", obs.Err(err))
	}
}
