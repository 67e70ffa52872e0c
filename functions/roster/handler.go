package main

import (
	"context"
	"log/slog"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/projection"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/sqsconsumer"
)

// batchConcurrency: one message at a time, in batch order. Order does not
// matter for correctness (the effects commute, see package projection), but
// the events of a batch are mostly about the same class, and each event's
// transaction writes the class's roster item (its as-of): run concurrently, those
// transactions would cancel each other (TransactionConflict) and retry, so
// sequential is the faster choice.
const batchConcurrency = 1

// Projector applies one decoded event exactly once for its consumer;
// *projection.Projector implements it.
type Projector interface {
	Apply(ctx context.Context, env events.Envelope) error
}

var _ Projector = (*projection.Projector)(nil)

// Handler applies the events of roster queue batches to the roster
// projection.
type Handler struct {
	consumer  *sqsconsumer.Consumer
	projector Projector
}

// newHandler wires the consumer of the roster queue; queue carries the queue
// settings (URLs, MaxReceiveCount).
func newHandler(queue sqsconsumer.Config, client sqsconsumer.SQS, p Projector, logger *slog.Logger) (*Handler, error) {
	queue.Name = functionName
	queue.Concurrency = batchConcurrency
	c, err := sqsconsumer.New(queue, client, logger)
	if err != nil {
		return nil, err
	}
	return &Handler{consumer: c, projector: p}, nil
}

// Handle processes one batch and reports the messages to retry; it never
// fails as a whole (see sqsconsumer.Consumer.Process). A repeated event is
// acknowledged without effect; a malformed or unsupported one, or an event id
// seen before with other content, goes to the dead-letter queue with the
// reason; any other failure is retried.
func (h *Handler) Handle(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		ctx = obs.WithAttrs(ctx, obs.RequestID(lc.AwsRequestID))
	}
	return h.consumer.Process(ctx, ev, h.handleMessage), nil
}

func (h *Handler) handleMessage(ctx context.Context, m sqsconsumer.Message) error {
	env, err := events.Decode([]byte(m.Body))
	if err != nil {
		return err // permanent: dead-lettered with the decoding error as reason
	}
	if m.Attribute(sqsconsumer.AttrEventID) == "" {
		ctx = obs.WithAttrs(ctx, obs.EventID(env.EventID))
	}
	// The default classification is the projection's contract:
	// inbox.ErrDuplicate → ack, inbox.ErrContractConflict → dead letter,
	// anything else → retry.
	return h.projector.Apply(ctx, env)
}
