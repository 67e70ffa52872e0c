package esm

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/clubdev/club/localcloud/invoke"
)

// Limits and defaults of SQS event source mappings.
const (
	DefaultSQSBatchSize = 10
	MaxSQSBatchSize     = 10000
	// DefaultMaximumConcurrency applies when SQSMapping.MaximumConcurrency
	// is 0. AWS has no default limit (it scales to the function's
	// concurrency); locally a handful of function processes is the norm.
	DefaultMaximumConcurrency = 5
	MinMaximumConcurrency     = 2
	MaxMaximumConcurrency     = 1000
	// MaxSQSBatchingWindow is AWS's limit on MaximumBatchingWindowInSeconds.
	MaxSQSBatchingWindow = 300 * time.Second
)

const (
	// maxReceive is the most messages one ReceiveMessage returns.
	maxReceive = 10
	// pollWaitSeconds bounds every long poll. A send wakes a long poll at
	// once, but a message whose visibility timeout expires does not, so a
	// long wait would delay redeliveries; one second bounds that delay.
	pollWaitSeconds = 1
	// maxWaitSeconds is SQS's longest long poll: a batching window longer
	// than that (AWS allows 300 s) is gathered in several polls.
	maxWaitSeconds = 20
	// deleteTimeout bounds the acknowledgement of a finished batch, which
	// runs even while the poller shuts down so that work done is not redone.
	deleteTimeout = 5 * time.Second
)

// SQSMapping is the configuration of one SQS event source mapping.
type SQSMapping struct {
	// UUID identifies the mapping (as in the Lambda API); used in logs.
	UUID         string
	FunctionName string
	QueueURL     string
	// QueueARN is the eventSourceARN of the events; its region becomes
	// their awsRegion.
	QueueARN string
	// BatchSize is the most messages per invocation: 1..10000, 0 means 10.
	// Above 10, MaximumBatchingWindow must be at least one second (as on
	// AWS), since one receive returns at most 10 messages.
	BatchSize int
	// MaximumBatchingWindow is how long to keep gathering messages after
	// the first one before invoking with a batch that is not full.
	MaximumBatchingWindow time.Duration
	// ReportBatchItemFailures enables partial batch responses
	// (FunctionResponseTypes: [ReportBatchItemFailures]).
	ReportBatchItemFailures bool
	// MaximumConcurrency caps concurrent invocations (ScalingConfig):
	// 2..1000, 0 means DefaultMaximumConcurrency.
	MaximumConcurrency int
	Enabled            bool
}

func (m *SQSMapping) applyDefaults() {
	if m.BatchSize == 0 {
		m.BatchSize = DefaultSQSBatchSize
	}
	if m.MaximumConcurrency == 0 {
		m.MaximumConcurrency = DefaultMaximumConcurrency
	}
}

func (m SQSMapping) validate() error {
	var errs []error
	if m.FunctionName == "" {
		errs = append(errs, errors.New("FunctionName is required"))
	}
	if m.QueueURL == "" {
		errs = append(errs, errors.New("QueueURL is required"))
	}
	if a, err := parseARN(m.QueueARN); err != nil {
		errs = append(errs, fmt.Errorf("QueueARN: %w", err))
	} else if a.Service != "sqs" {
		errs = append(errs, fmt.Errorf("QueueARN %q is not an SQS ARN", m.QueueARN))
	}
	if m.BatchSize < 1 || m.BatchSize > MaxSQSBatchSize {
		errs = append(errs, fmt.Errorf("BatchSize %d is outside 1..%d", m.BatchSize, MaxSQSBatchSize))
	}
	if m.MaximumBatchingWindow < 0 || m.MaximumBatchingWindow > MaxSQSBatchingWindow {
		errs = append(errs, fmt.Errorf("MaximumBatchingWindow %s is outside 0..%s", m.MaximumBatchingWindow, MaxSQSBatchingWindow))
	}
	if m.BatchSize > maxReceive && m.MaximumBatchingWindow < time.Second {
		errs = append(errs, fmt.Errorf("BatchSize %d needs a MaximumBatchingWindow of at least 1s", m.BatchSize))
	}
	if m.MaximumConcurrency < MinMaximumConcurrency || m.MaximumConcurrency > MaxMaximumConcurrency {
		errs = append(errs, fmt.Errorf("MaximumConcurrency %d is outside %d..%d", m.MaximumConcurrency, MinMaximumConcurrency, MaxMaximumConcurrency))
	}
	return errors.Join(errs...)
}

// QueueClient is the part of the SQS API a poller uses.
type QueueClient interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

var _ QueueClient = (*sqs.Client)(nil)

// SQSStats counts what a poller did since it started.
type SQSStats struct {
	Receives int64 // ReceiveMessage calls, empty ones included
	Batches  int64 // invocations
	Messages int64 // messages passed to the function, redeliveries included
	Deleted  int64 // messages deleted after they were processed
	// Failed counts messages left on the queue for redelivery: function
	// errors, reported item failures, invalid responses, failed invokes
	// and failed deletes.
	Failed int64
	// LostReceives counts receives that failed after they may have taken
	// messages; Released, the messages the endpoint made visible again
	// for them (WithReceiveReleaser).
	LostReceives int64
	Released     int64
	InFlight     int // invocations running now
	MaxInFlight  int // the most invocations that ran at once
	Pollers      int // pollers running now
}

// SQSPoller runs one SQS event source mapping.
type SQSPoller struct {
	cfg     SQSMapping
	region  string
	account string
	queue   QueueClient
	invoker invoke.Invoker
	logger  *slog.Logger
	backoff backoff
	// releaser and tokenHeader: see WithReceiveReleaser.
	releaser    ReceiveReleaser
	tokenHeader string

	wg    sync.WaitGroup // pollers
	mu    sync.Mutex     // guards stats
	stats SQSStats
}

// ReceiveReleaser makes the messages of a ReceiveMessage answer that never
// reached its caller visible again: the endpoint remembers each answer's
// receipt handles under a token the caller sent with the receive.
type ReceiveReleaser interface {
	ReleaseReceive(ctx context.Context, token string) (int, error)
}

// SQSOption configures an SQSPoller.
type SQSOption func(*SQSPoller)

// WithReceiveReleaser tags every receive with a fresh token in the header
// the endpoint reads, and after a receive fails asks r to release what the
// lost answer took. Without it such messages stay invisible until the
// queue's visibility timeout ends, and their receive counts still grow.
func WithReceiveReleaser(header string, r ReceiveReleaser) SQSOption {
	return func(p *SQSPoller) { p.tokenHeader, p.releaser = header, r }
}

// NewSQSPoller validates the mapping (after applying defaults) and returns a
// poller for it. A nil logger means slog.Default().
func NewSQSPoller(m SQSMapping, queue QueueClient, invoker invoke.Invoker, logger *slog.Logger, opts ...SQSOption) (*SQSPoller, error) {
	m.applyDefaults()
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("sqs event source mapping %s: %w", m.UUID, err)
	}
	if logger == nil {
		logger = slog.Default()
	}
	source, _ := parseARN(m.QueueARN) // validated above
	p := &SQSPoller{
		cfg:     m,
		region:  source.Region,
		account: source.Account,
		queue:   queue,
		invoker: invoker,
		logger:  logger.With("mapping", m.UUID, "function", m.FunctionName, "queue", m.QueueARN),
		// Receive and invoke failures are infrastructure problems (emulator
		// or function process down); back off so they do not spin.
		backoff: backoff{base: 100 * time.Millisecond, max: 5 * time.Second},
	}
	for _, opt := range opts {
		opt(p)
	}
	return p, nil
}

// Run polls the queue until ctx is cancelled, then waits for the batches in
// flight to finish and returns nil. A disabled mapping returns at once.
func (p *SQSPoller) Run(ctx context.Context) error {
	if !p.cfg.Enabled {
		p.logger.Info("event source mapping disabled")
		return nil
	}
	p.mu.Lock()
	p.stats.Pollers = 1
	p.mu.Unlock()
	p.wg.Go(func() { p.poll(ctx, true) })
	p.wg.Wait()
	p.mu.Lock()
	p.stats.Pollers = 0
	p.mu.Unlock()
	return nil
}

// Stats returns a snapshot of the counters.
func (p *SQSPoller) Stats() SQSStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// poll is one poller: receive a batch, invoke, settle, repeat. The primary
// poller runs until ctx is done; the others retire when the queue runs dry.
func (p *SQSPoller) poll(ctx context.Context, primary bool) {
	failures := 0
	for ctx.Err() == nil {
		batch, err := p.gather(ctx)
		if err != nil {
			if ctx.Err() != nil && len(batch) == 0 {
				return
			}
			p.logger.Warn("receive failed", "error", err, "gathered", len(batch))
			if len(batch) == 0 {
				failures++
				_ = sleep(ctx, p.backoff.delay(failures))
				continue
			}
			// Deliver what was gathered: those messages are already
			// invisible to other consumers.
		}
		failures = 0
		if len(batch) == 0 {
			if !primary {
				p.retire()
				return
			}
			continue
		}
		if len(batch) == p.cfg.BatchSize {
			p.scaleUp(ctx)
		}
		if !p.process(ctx, batch) {
			// The invoke itself failed (not the function): give the
			// function's process time to come back instead of burning
			// through receive counts.
			_ = sleep(ctx, p.backoff.delay(1))
		}
	}
}

// scaleUp adds a poller if the mapping is below its concurrency limit. A
// full batch suggests more messages are waiting.
func (p *SQSPoller) scaleUp(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stats.Pollers >= p.cfg.MaximumConcurrency {
		return
	}
	p.stats.Pollers++
	p.wg.Go(func() { p.poll(ctx, false) })
}

// retire accounts for a secondary poller that stops after an empty receive.
func (p *SQSPoller) retire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Pollers--
}

// gather receives up to BatchSize messages. It waits (in one-second long
// polls) for the first message; then, with a batching window, it keeps
// receiving until the batch is full or the window has passed. On a receive
// error it returns what it has gathered so far with the error.
func (p *SQSPoller) gather(ctx context.Context) ([]types.Message, error) {
	var batch []types.Message
	var windowEnd time.Time
	for len(batch) < p.cfg.BatchSize {
		wait := int32(pollWaitSeconds)
		if len(batch) > 0 {
			remaining := time.Until(windowEnd)
			if remaining <= 0 {
				break
			}
			// Whole seconds, rounded up: an SQS long poll cannot be
			// shorter than a second without becoming a busy short poll.
			wait = int32(min((remaining+time.Second-1)/time.Second, maxWaitSeconds))
		}
		p.mu.Lock()
		p.stats.Receives++
		p.mu.Unlock()
		opts := []func(*sqs.Options){noRetries}
		token := ""
		if p.releaser != nil {
			token = rand.Text()
			opts = append(opts, withHeader(p.tokenHeader, token))
		}
		out, err := p.queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(p.cfg.QueueURL),
			MaxNumberOfMessages:         int32(min(maxReceive, p.cfg.BatchSize-len(batch))),
			WaitTimeSeconds:             wait,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		}, opts...)
		if err != nil {
			if token != "" {
				p.releaseLost(ctx, token, err)
			}
			return batch, fmt.Errorf("receive from %s: %w", p.cfg.QueueURL, err)
		}
		if len(batch) == 0 && len(out.Messages) > 0 {
			if p.cfg.MaximumBatchingWindow == 0 {
				return out.Messages, nil
			}
			windowEnd = time.Now().Add(p.cfg.MaximumBatchingWindow)
		}
		batch = append(batch, out.Messages...)
	}
	return batch, nil
}

// noRetries turns off the SDK's own retries of a receive. A receive whose
// answer is lost (a connection closed while its body was read) may have
// taken messages; retried inside the SDK it would look like any other
// receive, and its token would be gone. The poller releases what it took
// (releaseLost), reports it and polls again after a backoff.
func noRetries(o *sqs.Options) { o.RetryMaxAttempts = 1 }

// withHeader adds one header to a call.
func withHeader(name, value string) func(*sqs.Options) {
	return func(o *sqs.Options) {
		o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue(name, value))
	}
}

// releaseLost asks the endpoint to make visible again whatever the failed
// receive under token took. It outlives cancellation of ctx: a receive cut
// short by shutdown may have taken messages too.
func (p *SQSPoller) releaseLost(ctx context.Context, token string, receiveErr error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	defer cancel()
	n, err := p.releaser.ReleaseReceive(ctx, token)
	p.mu.Lock()
	p.stats.LostReceives++
	p.stats.Released += int64(n)
	p.mu.Unlock()
	if n > 0 || err != nil {
		p.logger.Warn("a receive's answer was lost; the messages it took are visible again",
			"receive_error", receiveErr, "released", n, "release_error", err)
	}
}

// process invokes the function with a batch and settles the messages. It
// returns false when the invocation could not be made at all.
func (p *SQSPoller) process(ctx context.Context, batch []types.Message) bool {
	payload, err := json.Marshal(p.event(batch))
	if err != nil {
		p.addFailed(len(batch))
		p.logger.Error("cannot encode the SQS event; messages return after the visibility timeout", "error", err)
		return false
	}

	p.enter(len(batch))
	res, err := p.invoker.Invoke(ctx, p.cfg.FunctionName, payload)
	p.leave()

	if err != nil {
		p.addFailed(len(batch))
		if ctx.Err() == nil {
			p.logger.Warn("invoke failed; messages return after the visibility timeout", "error", err, "messages", len(batch))
		}
		return false
	}
	if res.Failed() {
		p.addFailed(len(batch))
		e := res.Error()
		p.logger.Warn("function error; messages return after the visibility timeout",
			"errorType", e.ErrorType, "errorMessage", e.ErrorMessage, "messages", len(batch))
		return true
	}

	done := batch
	if p.cfg.ReportBatchItemFailures {
		var reason string
		done, reason = p.succeeded(batch, res.Payload)
		if reason != "" {
			p.logger.Warn("invalid partial batch response; the whole batch failed", "reason", reason)
		}
		p.addFailed(len(batch) - len(done))
	}
	p.delete(ctx, done)
	return true
}

// succeeded applies a partial batch response: it returns the messages to
// delete, or none and the reason when the response fails the whole batch.
func (p *SQSPoller) succeeded(batch []types.Message, payload []byte) ([]types.Message, string) {
	ids, ok := parseBatchItemFailures(payload)
	if !ok {
		return nil, "response is not a batch response or has an empty itemIdentifier"
	}
	failed := make(map[string]bool, len(ids))
	inBatch := make(map[string]bool, len(batch))
	for _, m := range batch {
		inBatch[aws.ToString(m.MessageId)] = true
	}
	for _, id := range ids {
		if !inBatch[id] {
			return nil, fmt.Sprintf("itemIdentifier %q is not a message of the batch", id)
		}
		failed[id] = true
	}
	done := make([]types.Message, 0, len(batch)-len(failed))
	for _, m := range batch {
		if !failed[aws.ToString(m.MessageId)] {
			done = append(done, m)
		}
	}
	return done, ""
}

// delete acknowledges processed messages, ten per request. It outlives
// cancellation of ctx (for up to deleteTimeout) so that a batch the function
// finished is not redelivered because the poller is stopping.
func (p *SQSPoller) delete(ctx context.Context, msgs []types.Message) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	defer cancel()
	for start := 0; start < len(msgs); start += maxReceive {
		chunk := msgs[start:min(start+maxReceive, len(msgs))]
		entries := make([]types.DeleteMessageBatchRequestEntry, len(chunk))
		for i, m := range chunk {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		out, err := p.queue.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(p.cfg.QueueURL), Entries: entries})
		if err != nil {
			p.addFailed(len(chunk))
			p.logger.Warn("delete failed; processed messages will be redelivered", "error", err, "messages", len(chunk))
			continue
		}
		for _, f := range out.Failed {
			p.logger.Warn("delete failed; processed message will be redelivered", "code", aws.ToString(f.Code), "message", aws.ToString(f.Message))
		}
		p.mu.Lock()
		p.stats.Deleted += int64(len(out.Successful))
		p.stats.Failed += int64(len(out.Failed))
		p.mu.Unlock()
	}
}

func (p *SQSPoller) enter(messages int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Batches++
	p.stats.Messages += int64(messages)
	p.stats.InFlight++
	p.stats.MaxInFlight = max(p.stats.MaxInFlight, p.stats.InFlight)
}

func (p *SQSPoller) leave() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.InFlight--
}

func (p *SQSPoller) addFailed(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Failed += int64(n)
}

// event builds the Lambda SQS event for a batch.
func (p *SQSPoller) event(batch []types.Message) events.SQSEvent {
	ev := events.SQSEvent{Records: make([]events.SQSMessage, len(batch))}
	for i, m := range batch {
		ev.Records[i] = sqsRecord(m, p.cfg.QueueARN, p.region, p.account)
	}
	return ev
}

// sqsRecord converts a received message to a Lambda event record.
func sqsRecord(m types.Message, queueARN, region, account string) events.SQSMessage {
	attrs := make(map[string]string, len(m.Attributes)+1)
	for k, v := range m.Attributes {
		attrs[k] = v
	}
	if _, ok := attrs[string(types.MessageSystemAttributeNameSenderId)]; !ok {
		// The emulator does not record the sender; AWS always sends one.
		attrs[string(types.MessageSystemAttributeNameSenderId)] = account
	}
	// Lambda sends an empty object when there are no message attributes.
	msgAttrs := make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes))
	for name, a := range m.MessageAttributes {
		msgAttrs[name] = events.SQSMessageAttribute{
			StringValue: a.StringValue,
			BinaryValue: a.BinaryValue,
			// Lambda always sends the list fields, empty when unused.
			StringListValues: nonNil(a.StringListValues),
			BinaryListValues: nonNil(a.BinaryListValues),
			DataType:         aws.ToString(a.DataType),
		}
	}
	return events.SQSMessage{
		MessageId:              aws.ToString(m.MessageId),
		ReceiptHandle:          aws.ToString(m.ReceiptHandle),
		Body:                   aws.ToString(m.Body),
		Md5OfBody:              aws.ToString(m.MD5OfBody),
		Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
		Attributes:             attrs,
		MessageAttributes:      msgAttrs,
		EventSourceARN:         queueARN,
		EventSource:            "aws:sqs",
		AWSRegion:              region,
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
