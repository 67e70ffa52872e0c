package main

import (
	"context"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/relay"
)

// Sweeper runs one sweep; *relay.Sweeper implements it.
type Sweeper interface {
	Sweep(ctx context.Context, owner string) (relay.SweepResult, error)
}

// Handler runs one sweep per scheduled invocation.
type Handler struct {
	sweeper Sweeper
	// newOwner names the lease owner when the invocation has no request id
	// (only outside Lambda).
	newOwner func() string
}

// Handle sweeps once, as the owner named by the invocation's request id: a
// retried invocation (same id) renews its own lease, a concurrent one waits
// for the next schedule. The result is returned for people invoking the
// function by hand; the scheduler ignores it. An error means some rows could
// not be republished and the next run retries them.
func (h *Handler) Handle(ctx context.Context, _ lambdaevents.EventBridgeEvent) (relay.SweepResult, error) {
	owner := ""
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		owner = lc.AwsRequestID
	}
	if owner == "" {
		owner = h.newOwner()
	}
	ctx = obs.WithAttrs(ctx, obs.RequestID(owner))
	return h.sweeper.Sweep(ctx, owner)
}

func newHandler(s Sweeper) *Handler {
	return &Handler{sweeper: s, newOwner: events.NewID}
}
