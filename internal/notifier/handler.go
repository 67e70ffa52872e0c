package notifier

import (
	"context"
	"errors"
	"log/slog"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/mail"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/sqsconsumer"
)

// Dead-letter codes of the notifier, beside sqsconsumer's defaults.
const (
	codeNoAddress          = "no_address"
	codeEnrollmentNotFound = "enrollment_not_found"
	codeMailRejected       = "mail_rejected"
)

// batchConcurrency: the notifications of a batch are independent, so all ten
// go out at once. Sequentially, a slow provider (2 s a call) would hold a
// batch for 20 s, close to the function timeout; the provider's rate limit
// (429 with Retry-After) protects it from the burst.
const batchConcurrency = 10

// Handler turns SQS batches of the notifications queue into Notify calls.
type Handler struct {
	consumer *sqsconsumer.Consumer
	notifier *Notifier
}

// NewHandler wires the consumer of the notifications queue; queue carries
// the queue settings (URLs, MaxReceiveCount).
func NewHandler(queue sqsconsumer.Config, client sqsconsumer.SQS, n *Notifier, logger *slog.Logger) (*Handler, error) {
	queue.Name = FunctionName
	queue.Concurrency = batchConcurrency
	c, err := sqsconsumer.New(queue, client, logger)
	if err != nil {
		return nil, err
	}
	return &Handler{consumer: c, notifier: n}, nil
}

// Handle processes one batch and reports the messages to retry; it never
// fails as a whole (see sqsconsumer.Consumer.Process).
func (h *Handler) Handle(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		ctx = obs.WithAttrs(ctx, obs.RequestID(lc.AwsRequestID))
	}
	// Decode the batch once, up front, to read its students' addresses in
	// one request; each message is then handled on its own.
	decoded := make(map[string]decodedEvent, len(ev.Records))
	var students []string
	for _, r := range ev.Records {
		env, err := events.Decode([]byte(r.Body))
		decoded[r.MessageId] = decodedEvent{env: env, err: err}
		if err != nil || env.Type != events.TypeEnrollmentCreated {
			continue
		}
		if p, err := env.EnrollmentCreated(); err == nil {
			students = append(students, p.StudentID)
		}
	}
	addresses := h.notifier.addresses
	if b, ok := addresses.(BatchAddresses); ok {
		addresses = b.ForBatch(ctx, students)
	}
	var s samples // the batch's metrics: one line for all its messages
	resp := h.consumer.Process(ctx, ev, func(ctx context.Context, m sqsconsumer.Message) error {
		d := decoded[m.ID]
		if d.err != nil {
			return d.err // permanent: the consumer dead-letters it with the decoding error as reason
		}
		if m.Attribute(sqsconsumer.AttrEventID) == "" {
			ctx = obs.WithAttrs(ctx, obs.EventID(d.env.EventID))
		}
		return toConsumer(h.notifier.notify(ctx, d.env, m.LastAttempt, addresses, &s))
	})
	h.notifier.emit(ctx, &s)
	return resp, nil
}

// decodedEvent is a message body decoded, or why it could not be.
type decodedEvent struct {
	env events.Envelope
	err error
}

// toConsumer maps the notifier's permanent causes and the provider's
// Retry-After to the consumer's classification; the rest (events sentinels,
// transient errors) the consumer classifies itself.
func toConsumer(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, profile.ErrNoAddress):
		return sqsconsumer.Permanent(codeNoAddress, err)
	case errors.Is(err, club.ErrNotFound):
		return sqsconsumer.Permanent(codeEnrollmentNotFound, err)
	case errors.Is(err, mail.ErrKeyReused):
		return sqsconsumer.Permanent(sqsconsumer.CodeContractConflict, err)
	case errors.Is(err, mail.ErrRejected):
		return sqsconsumer.Permanent(codeMailRejected, err)
	}
	if d, ok := mail.RetryAfter(err); ok {
		return sqsconsumer.RetryAfter(d, err)
	}
	return err
}
