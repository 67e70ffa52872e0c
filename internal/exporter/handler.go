package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/operation"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/sqsconsumer"
)

// Dead-letter codes of the exporter, beside sqsconsumer's defaults.
const (
	// CodeOperationNotFound: the job names no operation.
	CodeOperationNotFound = "operation_not_found"
	// CodeUnexpectedType: a message of another type reached the exports
	// queue (a routing mistake to look at, not work to retry).
	CodeUnexpectedType = "unexpected_type"
)

// batchConcurrency: the jobs of a batch run one after another; the event
// source mapping's MaximumConcurrency is the bulk class's bound.
const batchConcurrency = 1

// Handler turns SQS batches of the exports queue into Export calls.
type Handler struct {
	consumer *sqsconsumer.Consumer
	exporter *Exporter
}

// NewHandler wires the consumer of the exports queue; queue carries the
// queue settings (URLs, MaxReceiveCount).
func NewHandler(queue sqsconsumer.Config, client sqsconsumer.SQS, e *Exporter, logger *slog.Logger) (*Handler, error) {
	if e == nil {
		return nil, errors.New("exporter handler: nil Exporter")
	}
	queue.Name = functionName
	queue.Concurrency = batchConcurrency
	c, err := sqsconsumer.New(queue, client, logger)
	if err != nil {
		return nil, err
	}
	return &Handler{consumer: c, exporter: e}, nil
}

// Handle processes one batch and reports the jobs to retry; it never fails
// as a whole (see sqsconsumer.Consumer.Process).
func (h *Handler) Handle(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		ctx = obs.WithAttrs(ctx, obs.RequestID(lc.AwsRequestID))
	}
	return h.consumer.Process(ctx, ev, h.handleMessage), nil
}

func (h *Handler) handleMessage(ctx context.Context, m sqsconsumer.Message) error {
	env, err := events.Decode([]byte(m.Body))
	if errors.Is(err, events.ErrMalformed) {
		if id := operationNamedBy(m.Body); id != "" {
			if rerr := h.exporter.Reject(ctx, id, err); rerr != nil {
				return rerr // transient: the failure is recorded on a later delivery
			}
		}
	}
	if err != nil {
		return err // permanent: dead-lettered with the decoding error as reason
	}
	if m.Attribute(sqsconsumer.AttrEventID) == "" {
		ctx = obs.WithAttrs(ctx, obs.EventID(env.EventID))
	}
	err = h.exporter.Export(ctx, env, m.LastAttempt)
	switch {
	case errors.Is(err, operation.ErrNotFound):
		return sqsconsumer.Permanent(CodeOperationNotFound, err)
	case errors.Is(err, events.ErrWrongType):
		return sqsconsumer.Permanent(CodeUnexpectedType, err)
	}
	return err
}

// operationNamedBy reads, as leniently as it can, the operation a malformed
// export.requested job is about: its data's operation_id, else its
// aggregate_id. Other types name nothing.
func operationNamedBy(body string) string {
	var job struct {
		Type        string `json:"type"`
		AggregateID string `json:"aggregate_id"`
		Data        struct {
			OperationID string `json:"operation_id"`
		} `json:"data"`
	}
	if json.Unmarshal([]byte(body), &job) != nil || events.Type(job.Type) != events.TypeExportRequested {
		return ""
	}
	if job.Data.OperationID != "" {
		return job.Data.OperationID
	}
	return job.AggregateID
}
