package reports

import (
	"context"
	"errors"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/clubdev/club/internal/obs"
)

// Handler turns the schedule's events into runs.
type Handler struct {
	scheduler *Scheduler
}

// NewHandler returns the handler of the schedule's events.
func NewHandler(s *Scheduler) (*Handler, error) {
	if s == nil {
		return nil, errors.New("reports handler: nil Scheduler")
	}
	return &Handler{scheduler: s}, nil
}

// Handle runs the scheduler for the day of the event's time: the scheduled
// fire time, the same on every retry of one fire. An event without a time
// (someone invoking the function by hand with {}) means today. An error
// fails the invocation, and the asynchronous retry runs it again.
func (h *Handler) Handle(ctx context.Context, ev lambdaevents.EventBridgeEvent) (Result, error) {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		ctx = obs.WithAttrs(ctx, obs.RequestID(lc.AwsRequestID))
	}
	date := ev.Time
	if date.IsZero() {
		date = h.scheduler.now()
	}
	return h.scheduler.Run(ctx, date.In(time.UTC))
}
