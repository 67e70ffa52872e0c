package projectionhandler

import (
	"context"
	"log/slog"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/projection"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/store"
)

// Projector applies decoded events exactly once for its consumer;
// *projection.Projector implements it.
type Projector interface {
	// ApplyAll applies a batch and returns one result per event (see
	// projection.Projector.ApplyAll).
	ApplyAll(ctx context.Context, envs []events.Envelope) []error
}

var _ Projector = (*projection.Projector)(nil)

// Handler applies the events of a queue's batches through a Projector.
type Handler struct {
	consumer  *sqsconsumer.Consumer
	projector Projector
}

// New wires the consumer of a projection queue; queue carries the queue
// settings (Name, URLs, MaxReceiveCount).
func New(queue sqsconsumer.Config, client sqsconsumer.SQS, p Projector, logger *slog.Logger) (*Handler, error) {
	c, err := sqsconsumer.New(queue, client, logger)
	if err != nil {
		return nil, err
	}
	return &Handler{consumer: c, projector: p}, nil
}

// Build is New as a function's main wires it, over the AWS SDK
// configuration the main loaded: the store and the projector newProjector
// makes over its inbox (projection.NewRosterProjector or
// projection.NewStatsProjector).
func Build(awsCfg aws.Config, cfg Config, newProjector func(projection.Inbox) *projection.Projector, logger *slog.Logger) (*Handler, error) {
	st, err := store.New(dynamodb.NewFromConfig(awsCfg), cfg.Store())
	if err != nil {
		return nil, err
	}
	return New(cfg.Queue, sqs.NewFromConfig(awsCfg), newProjector(st.Inbox), logger)
}

// Handle processes one batch and reports the messages to retry; it never
// fails as a whole (see sqsconsumer.Consumer.ProcessBatch). The batch's
// events are applied together, in one transaction when they can be; a
// repeated event is acknowledged without effect; a malformed or unsupported
// one, or an event id seen before with other content, goes to the
// dead-letter queue with the reason; any other failure is retried.
func (h *Handler) Handle(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		ctx = obs.WithAttrs(ctx, obs.RequestID(lc.AwsRequestID))
	}
	return h.consumer.ProcessBatch(ctx, ev, h.handleBatch), nil
}

func (h *Handler) handleBatch(ctx context.Context, msgs []sqsconsumer.Message) []error {
	errs := make([]error, len(msgs))
	envs := make([]events.Envelope, 0, len(msgs))
	at := make([]int, 0, len(msgs)) // index in msgs of each envelope
	for i, m := range msgs {
		env, err := events.Decode([]byte(m.Body))
		if err != nil {
			errs[i] = err // permanent: dead-lettered with the decoding error as reason
			continue
		}
		envs = append(envs, env)
		at = append(at, i)
	}
	// The default classification is the projection's contract:
	// inbox.ErrDuplicate → ack, inbox.ErrContractConflict → dead letter,
	// anything else → retry.
	for j, err := range h.projector.ApplyAll(ctx, envs) {
		errs[at[j]] = err
	}
	return errs
}
