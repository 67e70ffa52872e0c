package storetest

import (
	"context"
	"errors"
	"fmt"
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

// enrollmentOf is student s-i's enrollment e-i in class as a consumer
// applies it: counted, and put on the roster when roster is set.
func enrollmentOf(t *testing.T, class string, i int, at time.Time, roster bool) projection.Application {
	t.Helper()
	env := created(t, class, fmt.Sprintf("e-%d", i), fmt.Sprintf("s-%d", i), at)
	effects := []projection.Effect{projection.CountStats{ClassID: class, Enrollments: 1}}
	if roster {
		effects = append(effects, projection.AddToRoster{ClassID: class, EnrollmentID: fmt.Sprintf("e-%d", i), StudentID: fmt.Sprintf("s-%d", i), EnrolledAt: at})
	}
	return projection.Application{Event: env, Effects: effects}
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

	t.Run("the roster's as-of is its latest write, a cancellation included", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		roster := projection.NewRosterProjector(p.Inbox)
		before := time.Now().Add(-time.Second)
		require.NoError(t, roster.Apply(ctx, created(t, "c-asof", "e-1", "s-1", t0)))
		r, err := p.Projections.Roster(ctx, "c-asof")
		require.NoError(t, err)
		first := r.AsOf
		require.True(t, first.After(before), "as-of %v is the write's time", first)

		// Another class's write does not move it; a cancellation does not
		// move it back.
		require.NoError(t, roster.Apply(ctx, created(t, "c-other", "e-9", "s-9", t0)))
		require.NoError(t, roster.Apply(ctx, cancelled(t, "c-asof", "e-1", "s-1", t0.Add(time.Minute))))
		r, err = p.Projections.Roster(ctx, "c-asof")
		require.NoError(t, err)
		require.Empty(t, r.Students)
		require.False(t, r.AsOf.Before(first), "as-of %v went back from %v", r.AsOf, first)
		require.True(t, r.AsOf.Before(time.Now().Add(time.Second)))
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

	t.Run("a batch applies together, merging effects on one item", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		// Ten enrollments in two classes, and the cancellation of one of
		// them in the same batch: one roster entry gets both effects.
		var batch []projection.Application
		for i := range 10 {
			batch = append(batch, enrollmentOf(t, fmt.Sprintf("c-%d", i%2), i, t0.Add(time.Duration(i)*time.Second), true))
		}
		leave := cancelled(t, "c-0", "e-4", "s-4", t0.Add(time.Hour))
		batch = append(batch, projection.Application{Event: leave, Effects: []projection.Effect{
			projection.RemoveFromRoster{ClassID: "c-0", EnrollmentID: "e-4", CancelledAt: leave.OccurredAt},
			projection.CountStats{ClassID: "c-0", Cancellations: 1},
		}})
		require.NoError(t, p.Inbox.ApplyAllOnce(ctx, "bulk", batch))

		r, err := p.Projections.Roster(ctx, "c-0")
		require.NoError(t, err)
		var ids []string
		for _, s := range r.Students {
			ids = append(ids, s.StudentID)
		}
		require.Equal(t, []string{"s-0", "s-2", "s-6", "s-8"}, ids)
		st, err := p.Projections.Stats(ctx, "c-0")
		require.NoError(t, err)
		require.Equal(t, projection.Stats{ClassID: "c-0", EnrollmentsTotal: 5, CancellationsTotal: 1}, st)
		st, err = p.Projections.Stats(ctx, "c-1")
		require.NoError(t, err)
		require.Equal(t, projection.Stats{ClassID: "c-1", EnrollmentsTotal: 5}, st)
		for _, a := range batch {
			require.ErrorIs(t, p.Inbox.ApplyOnce(ctx, "bulk", a.Event, a.Effects), inbox.ErrDuplicate)
		}
	})

	t.Run("a batch holding an applied event fails and ApplyOnce settles it", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		var batch []projection.Application
		for i := range 5 {
			batch = append(batch, enrollmentOf(t, "c-1", i, t0, false))
		}
		require.NoError(t, p.Inbox.ApplyOnce(ctx, "bulk", batch[2].Event, batch[2].Effects))
		require.Error(t, p.Inbox.ApplyAllOnce(ctx, "bulk", batch))
		applied, dups := 0, 0
		for _, a := range batch {
			switch err := p.Inbox.ApplyOnce(ctx, "bulk", a.Event, a.Effects); {
			case err == nil:
				applied++
			case errors.Is(err, inbox.ErrDuplicate):
				dups++
			default:
				t.Fatalf("apply once: %v", err)
			}
		}
		require.Equal(t, 5, applied+dups)
		require.GreaterOrEqual(t, dups, 1)
		st, err := p.Projections.Stats(ctx, "c-1")
		require.NoError(t, err)
		require.EqualValues(t, 5, st.EnrollmentsTotal, "each event counted once")
	})

	t.Run("a batch too big for one transaction", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		// An inbox row and a counter per event: 140 items.
		var batch []projection.Application
		for i := range 70 {
			batch = append(batch, enrollmentOf(t, fmt.Sprintf("c-%d", i), i, t0, false))
		}
		require.NoError(t, p.Inbox.ApplyAllOnce(ctx, "bulk", batch))
		for i := range 70 {
			st, err := p.Projections.Stats(ctx, fmt.Sprintf("c-%d", i))
			require.NoError(t, err)
			require.EqualValues(t, 1, st.EnrollmentsTotal)
		}
	})

	t.Run("invalid consumer name", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		env := created(t, "c-1", "e-1", "s-1", t0)
		require.Error(t, p.Inbox.ApplyOnce(context.Background(), "Bad#Name", env, nil))
	})
}
