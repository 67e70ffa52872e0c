package relay

import (
	"context"
	"errors"
	"fmt"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/outbox"
)

// ErrNoRoute: the routing table has no publisher for the row's kind (or the
// type is unknown to this build). It is permanent: retrying the same row
// cannot succeed until a route is deployed.
var ErrNoRoute = errors.New("no route")

// Message is one outbox row as a publisher sends it.
type Message struct {
	EventID     string
	Type        events.Type
	AggregateID string
	// Body is the envelope JSON, exactly as stored in the outbox.
	Body []byte
}

// MessageOf returns the message for an outbox row.
func MessageOf(r outbox.Row) Message {
	return Message{EventID: r.EventID, Type: r.Type, AggregateID: r.AggregateID, Body: r.Payload}
}

// Publisher hands messages to one destination (a topic, a queue, a state
// machine).
type Publisher interface {
	// Publish sends msgs in order and returns how many of them, from the
	// start, are known to be accepted by the destination. If that is less
	// than len(msgs), err says why msgs[n] was not; messages after it may or
	// may not have been sent (they will be sent again, with the same
	// event_id). Publishing the same message twice must be harmless to the
	// destination's consumers, which deduplicate by event_id.
	Publish(ctx context.Context, msgs []Message) (n int, err error)
}

// Routes is the routing table: the publisher that carries each kind.
type Routes map[events.Kind]Publisher

// route returns the kind and publisher for t, or an error wrapping
// ErrNoRoute.
func (r Routes) route(t events.Type) (events.Kind, Publisher, error) {
	kind, ok := events.KindOf(t)
	if !ok {
		return "", nil, fmt.Errorf("%w for type %q: %w", ErrNoRoute, t, events.ErrUnknownType)
	}
	p := r[kind]
	if p == nil {
		return kind, nil, fmt.Errorf("%w for kind %q (type %s)", ErrNoRoute, kind, t)
	}
	return kind, p, nil
}
