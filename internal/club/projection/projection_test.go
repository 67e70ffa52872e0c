package projection_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/events/examples"
	"github.com/clubdev/club/internal/club/inbox"
	"github.com/clubdev/club/internal/club/projection"
	"github.com/clubdev/club/internal/store/memstore"
)

// TestEveryConsumerReadsEveryStoredVersion is the readers-first rule: each
// consumer handles every example in events/examples, and the enrollment
// events change its read model.
func TestEveryConsumerReadsEveryStoredVersion(t *testing.T) {
	t.Parallel()
	for _, ex := range examples.All() {
		t.Run(ex.Name, func(t *testing.T) {
			t.Parallel()
			env, err := events.Decode(ex.JSON)
			require.NoError(t, err)
			mem := memstore.New()
			ctx := context.Background()
			used := env.Type == events.TypeEnrollmentCreated || env.Type == events.TypeEnrollmentCancelled
			for _, p := range []*projection.Projector{projection.NewRosterProjector(mem.Inbox), projection.NewStatsProjector(mem.Inbox)} {
				require.NoError(t, p.Apply(ctx, env), p.Consumer())
				again := p.Apply(ctx, env)
				if used {
					require.ErrorIs(t, again, inbox.ErrDuplicate, "%s: the first apply was recorded", p.Consumer())
				} else {
					require.NoError(t, again, "%s: events it does not use are ignored", p.Consumer())
				}
			}
			var classID string
			switch env.Type {
			case events.TypeEnrollmentCreated:
				p, _ := env.EnrollmentCreated()
				classID = p.ClassID
			case events.TypeEnrollmentCancelled:
				p, _ := env.EnrollmentCancelled()
				classID = p.ClassID
			default:
				return
			}
			st, err := mem.Projections.Stats(ctx, classID)
			require.NoError(t, err)
			require.EqualValues(t, 1, st.EnrollmentsTotal+st.CancellationsTotal)
		})
	}
}

// TestUnusedEventsNeedNoInbox: a projector ignores types it does not use
// (they would normally be filtered out by the subscription).
func TestUnusedEventsNeedNoInbox(t *testing.T) {
	t.Parallel()
	env, err := events.New(events.NewID(), time.Now(), events.ExportRequested{OperationID: "op", Kind: events.ExportKindRosterExport, ClassID: "c", RequestedBy: "t"})
	require.NoError(t, err)
	p := projection.NewStatsProjector(nilInbox{t})
	require.NoError(t, p.Apply(context.Background(), env))
}

type nilInbox struct{ t *testing.T }

func (n nilInbox) ApplyOnce(context.Context, string, events.Envelope, []projection.Effect) error {
	n.t.Error("ApplyOnce called for an event the consumer does not use")
	return nil
}

func TestEffects(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	created, err := events.New(events.NewID(), at, events.EnrollmentCreated{EnrollmentID: "e", ClassID: "c", StudentID: "s"})
	require.NoError(t, err)
	cancelled, err := events.New(events.NewID(), at, events.EnrollmentCancelled{EnrollmentID: "e", ClassID: "c", StudentID: "s"})
	require.NoError(t, err)

	tests := []struct {
		name string
		fn   func(events.Envelope) ([]projection.Effect, error)
		env  events.Envelope
		want []projection.Effect
	}{
		{"roster, created", projection.RosterEffects, created, []projection.Effect{projection.AddToRoster{ClassID: "c", EnrollmentID: "e", StudentID: "s", EnrolledAt: at}}},
		{"roster, cancelled", projection.RosterEffects, cancelled, []projection.Effect{projection.RemoveFromRoster{ClassID: "c", EnrollmentID: "e", CancelledAt: at}}},
		{"stats, created", projection.StatsEffects, created, []projection.Effect{projection.CountStats{ClassID: "c", Enrollments: 1}}},
		{"stats, cancelled", projection.StatsEffects, cancelled, []projection.Effect{projection.CountStats{ClassID: "c", Cancellations: 1}}},
	}
	for _, tt := range tests {
		got, err := tt.fn(tt.env)
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.want, got, tt.name)
	}

	broken := created
	broken.Data = []byte(`{"enrollment_id":"e"}`)
	for _, fn := range []func(events.Envelope) ([]projection.Effect, error){projection.RosterEffects, projection.StatsEffects} {
		_, err := fn(broken)
		require.ErrorIs(t, err, events.ErrMalformed)
	}
}

// failingInbox fails with a transient error.
type failingInbox struct{}

func (failingInbox) ApplyOnce(context.Context, string, events.Envelope, []projection.Effect) error {
	return errors.New("throttled")
}

func TestApplyKeepsTheClassification(t *testing.T) {
	t.Parallel()
	env, err := events.New(events.NewID(), time.Now(), events.EnrollmentCreated{EnrollmentID: "e", ClassID: "c", StudentID: "s"})
	require.NoError(t, err)
	err = projection.NewRosterProjector(failingInbox{}).Apply(context.Background(), env)
	require.ErrorContains(t, err, "throttled")
	require.ErrorContains(t, err, env.EventID, "errors name the event")
	for _, permanent := range []error{inbox.ErrDuplicate, inbox.ErrContractConflict, events.ErrMalformed} {
		require.NotErrorIs(t, err, permanent)
	}
}
