package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/clubdev/club/events"
)

// DefaultRetention is how long a published row is kept before its TTL removes
// it: it must cover the window in which an operator may want to replay
// published events from the outbox.
const DefaultRetention = 7 * 24 * time.Hour

// Status is the publication state of a row.
type Status string

const (
	StatusPending   Status = "pending"
	StatusPublished Status = "published"
)

// Row is one outbox row.
type Row struct {
	EventID     string
	Type        events.Type
	AggregateID string
	// Payload is the complete envelope as JSON: what the relay publishes,
	// byte for byte, on every attempt.
	Payload     []byte
	CreatedAt   time.Time
	Status      Status
	PublishedAt time.Time // zero while pending
}

// NewRow returns the pending row for an envelope.
func NewRow(env events.Envelope, createdAt time.Time) (Row, error) {
	payload, err := json.Marshal(env)
	if err != nil {
		return Row{}, fmt.Errorf("outbox row for event %s: %w", env.EventID, err)
	}
	return Row{
		EventID:     env.EventID,
		Type:        env.Type,
		AggregateID: env.AggregateID,
		Payload:     payload,
		CreatedAt:   createdAt.UTC(),
		Status:      StatusPending,
	}, nil
}

// Envelope decodes the row's payload (errors as events.Decode).
func (r Row) Envelope() (events.Envelope, error) { return events.Decode(r.Payload) }

// Store is what the relay and the sweeper need from the outbox. Rows are
// inserted only by the producers' transactions (for example
// enrollment.Store.Create), never through this port.
type Store interface {
	// MarkPublished records that the event was handed to the broker. It is a
	// conditional write (only a pending row changes) and it is idempotent:
	// marking a published row again returns nil and keeps the first
	// published_at. An unknown event id returns club.ErrNotFound.
	MarkPublished(ctx context.Context, eventID string, at time.Time) error
	// Unpublished returns up to limit pending rows created before
	// createdBefore, oldest first. It never returns published rows.
	Unpublished(ctx context.Context, createdBefore time.Time, limit int) ([]Row, error)
	// Get returns one row or club.ErrNotFound.
	Get(ctx context.Context, eventID string) (Row, error)
}

// SortOldestFirst orders rows by creation time, then event id: the order
// Store.Unpublished returns.
func SortOldestFirst(rows []Row) {
	slices.SortFunc(rows, func(a, b Row) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.EventID, b.EventID))
	})
}

// Pending is what Store.Unpublished returns from all of a store's rows: the
// pending ones created before createdBefore, oldest first, at most limit.
// In-memory stores use it.
func Pending(rows iter.Seq[Row], createdBefore time.Time, limit int) []Row {
	var out []Row
	for r := range rows {
		if r.Status == StatusPending && r.CreatedAt.Before(createdBefore) {
			out = append(out, r)
		}
	}
	SortOldestFirst(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}
