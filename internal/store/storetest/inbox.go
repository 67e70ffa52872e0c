package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/inbox"
	"github.com/clubdev/club/internal/club/projection"
)

func created(t *testing.T, classID, enrollmentID, student string, at time.Time) events.Envelope {
	t.Helper()
	env, err := events.New(events.NewID(), at, events.EnrollmentCreated{EnrollmentID: enrollmentID, ClassID: classID, StudentID: student})
	require.NoError(t, err)
	return env
}

func cancelled(t *testing.T, classID, enrollmentID, student string, at time.Time) events.Envelope {
	t.Helper()
	env, err := events.New(events.NewID(), at, events.EnrollmentCancelled{EnrollmentID: enrollmentID, ClassID: classID, StudentID: student})
	require.NoError(t, err)
	return env
}

// RunInbox checks projection.Inbox and projection.Reader together: effects
// are only observable through the reader.
func RunInbox(t *testing.T, newPorts Factory) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

	t.Run("apply once, duplicates change nothing", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		roster, stats := projection.NewRosterProjector(p.Inbox), projection.NewStatsProjector(p.Inbox)
		env := created(t, "c-1", "e-1", "s-1", t0)

		empty, err := p.Projections.Roster(ctx, "c-1")
		require.NoError(t, err)
		require.Empty(t, empty.Students)
		require.NotNil(t, empty.Students)
		require.True(t, empty.AsOf.IsZero())

		for _, pr := range []*projection.Projector{roster, stats} {
			require.NoError(t, pr.Apply(ctx, env))
		}
		for range 3 {
			for _, pr := range []*projection.Projector{roster, stats} {
				require.ErrorIs(t, pr.Apply(ctx, env), inbox.ErrDuplicate, pr.Consumer())
			}
		}
		r, err := p.Projections.Roster(ctx, "c-1")
		require.NoError(t, err)
		require.Equal(t, []projection.Student{{StudentID: "s-1", EnrolledAt: t0}}, r.Students)
		require.False(t, r.AsOf.IsZero())
		st, err := p.Projections.Stats(ctx, "c-1")
		require.NoError(t, err)
		require.Equal(t, projection.Stats{ClassID: "c-1", EnrollmentsTotal: 1}, st)
	})

	t.Run("same id with other content is a contract conflict", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		stats := projection.NewStatsProjector(p.Inbox)
		env := created(t, "c-1", "e-1", "s-1", t0)
		require.NoError(t, stats.Apply(ctx, env))

		forged := created(t, "c-2", "e-1", "s-1", t0)
		forged.EventID = env.EventID
		err := stats.Apply(ctx, forged)
		require.ErrorIs(t, err, inbox.ErrContractConflict)
		require.NotErrorIs(t, err, inbox.ErrDuplicate)

		for _, class := range []string{"c-1", "c-2"} {
			st, err := p.Projections.Stats(ctx, class)
			require.NoError(t, err)
			want := int64(0)
			if class == "c-1" {
				want = 1
			}
			require.Equal(t, want, st.EnrollmentsTotal, "the conflicting delivery changed nothing (%s)", class)
		}
	})

	t.Run("consumers are independent", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		env := created(t, "c-1", "e-1", "s-1", t0)
		require.NoError(t, projection.NewStatsProjector(p.Inbox).Apply(ctx, env))
		require.NoError(t, projection.NewRosterProjector(p.Inbox).Apply(ctx, env), "the roster has not seen it")
		require.NoError(t, p.Inbox.ApplyOnce(ctx, "another-consumer", env, []projection.Effect{projection.CountStats{ClassID: "c-9", Enrollments: 2}}))
		st, err := p.Projections.Stats(ctx, "c-9")
		require.NoError(t, err)
		require.EqualValues(t, 2, st.EnrollmentsTotal)
	})

	t.Run("order of delivery does not matter", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		roster, stats := projection.NewRosterProjector(p.Inbox), projection.NewStatsProjector(p.Inbox)
		// e-1 is cancelled, and the cancellation arrives first.
		seq := []events.Envelope{
			cancelled(t, "c-1", "e-1", "s-1", t0.Add(time.Minute)),
			created(t, "c-1", "e-2", "s-2", t0.Add(2*time.Second)),
			created(t, "c-1", "e-1", "s-1", t0),
			created(t, "c-1", "e-3", "s-0", t0.Add(2*time.Second)),
		}
		for _, env := range seq {
			require.NoError(t, roster.Apply(ctx, env))
			require.NoError(t, stats.Apply(ctx, env))
		}
		r, err := p.Projections.Roster(ctx, "c-1")
		require.NoError(t, err)
		require.Equal(t, []projection.Student{
			{StudentID: "s-0", EnrolledAt: t0.Add(2 * time.Second)},
			{StudentID: "s-2", EnrolledAt: t0.Add(2 * time.Second)},
		}, r.Students, "ordered by time, then id; the cancelled one is absent")
		st, err := p.Projections.Stats(ctx, "c-1")
		require.NoError(t, err)
		require.Equal(t, projection.Stats{ClassID: "c-1", EnrollmentsTotal: 3, CancellationsTotal: 1}, st)
	})

	t.Run("concurrent duplicates apply once", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		stats := projection.NewStatsProjector(p.Inbox)
		env := created(t, "c-1", "e-1", "s-1", t0)
		var applied, dup atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 20 {
			wg.Go(func() {
				<-start
				switch err := stats.Apply(ctx, env); {
				case err == nil:
					applied.Add(1)
				case errors.Is(err, inbox.ErrDuplicate):
					dup.Add(1)
				default:
					t.Errorf("apply: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		require.EqualValues(t, 1, applied.Load())
		require.EqualValues(t, 19, dup.Load())
		st, err := p.Projections.Stats(ctx, "c-1")
		require.NoError(t, err)
		require.EqualValues(t, 1, st.EnrollmentsTotal)
	})

	t.Run("several effects in one event", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		env := created(t, "c-1", "e-1", "s-1", t0)
		require.NoError(t, p.Inbox.ApplyOnce(ctx, "bulk", env, []projection.Effect{
			projection.CountStats{ClassID: "c-1", Enrollments: 1},
			projection.CountStats{ClassID: "c-1", Cancellations: 2},
			projection.AddToRoster{ClassID: "c-1", EnrollmentID: "e-1", StudentID: "s-1", EnrolledAt: t0},
			projection.AddToRoster{ClassID: "c-1", EnrollmentID: "e-2", StudentID: "s-2", EnrolledAt: t0},
		}))
		st, err := p.Projections.Stats(ctx, "c-1")
		require.NoError(t, err)
		require.Equal(t, projection.Stats{ClassID: "c-1", EnrollmentsTotal: 1, CancellationsTotal: 2}, st)
		r, err := p.Projections.Roster(ctx, "c-1")
		require.NoError(t, err)
		require.Len(t, r.Students, 2)
	})

	t.Run("invalid consumer name", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		env := created(t, "c-1", "e-1", "s-1", t0)
		require.Error(t, p.Inbox.ApplyOnce(context.Background(), "Bad#Name", env, nil))
	})
}
