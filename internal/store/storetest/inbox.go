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

// rosterBatch is envs as the roster consumer applies them.
func rosterBatch(t *testing.T, envs ...events.Envelope) []projection.Application {
	t.Helper()
	batch := make([]projection.Application, 0, len(envs))
	for _, env := range envs {
		effects, err := projection.RosterEffects(env)
		require.NoError(t, err)
		batch = append(batch, projection.Application{Event: env, Effects: effects})
	}
	return batch
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
		env := created(t, "c-1", "e-1", "s-1", t0)
		// The counters' inbox row and the roster's entry each let one win.
		for _, pr := range []*projection.Projector{projection.NewStatsProjector(p.Inbox), projection.NewRosterProjector(p.Inbox)} {
			var applied, dup atomic.Int32
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range 20 {
				wg.Go(func() {
					<-start
					switch err := pr.Apply(ctx, env); {
					case err == nil:
						applied.Add(1)
					case errors.Is(err, inbox.ErrDuplicate):
						dup.Add(1)
					default:
						t.Errorf("%s: apply: %v", pr.Consumer(), err)
					}
				})
			}
			close(start)
			wg.Wait()
			require.EqualValues(t, 1, applied.Load(), pr.Consumer())
			require.EqualValues(t, 19, dup.Load(), pr.Consumer())
		}
		st, err := p.Projections.Stats(ctx, "c-1")
		require.NoError(t, err)
		require.EqualValues(t, 1, st.EnrollmentsTotal)
		r, err := p.Projections.Roster(ctx, "c-1")
		require.NoError(t, err)
		require.Equal(t, []projection.Student{{StudentID: "s-1", EnrolledAt: t0}}, r.Students)
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

	t.Run("a batch holding recorded events applies the others and names those", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		var batch []projection.Application
		for i := range 6 {
			batch = append(batch, enrollmentOf(t, "c-1", i, t0, false))
		}
		// Event 2 was applied before (a redelivery); an event under event
		// 4's id with another payload was applied before (a contract
		// conflict).
		require.NoError(t, p.Inbox.ApplyOnce(ctx, "bulk", batch[2].Event, batch[2].Effects))
		other := enrollmentOf(t, "c-9", 4, t0, false)
		other.Event.EventID = batch[4].Event.EventID
		require.NoError(t, p.Inbox.ApplyOnce(ctx, "bulk", other.Event, other.Effects))

		err := p.Inbox.ApplyAllOnce(ctx, "bulk", batch)
		var recorded *projection.AlreadyRecorded
		require.ErrorAs(t, err, &recorded)
		require.ElementsMatch(t, []string{batch[2].Event.EventID, batch[4].Event.EventID}, recorded.EventIDs)
		require.ErrorIs(t, recorded.Settled[batch[2].Event.EventID], inbox.ErrDuplicate, "read from its record")
		require.ErrorIs(t, recorded.Settled[batch[4].Event.EventID], inbox.ErrContractConflict, "read from its record")
		st, err := p.Projections.Stats(ctx, "c-1")
		require.NoError(t, err)
		require.EqualValues(t, 5, st.EnrollmentsTotal, "the four new events and event 2 before: each counted once")
		for i, a := range batch {
			err := p.Inbox.ApplyOnce(ctx, "bulk", a.Event, a.Effects)
			switch i {
			case 4:
				require.ErrorIs(t, err, inbox.ErrContractConflict)
			default:
				require.ErrorIs(t, err, inbox.ErrDuplicate, "event %d", i)
			}
		}
		st, err = p.Projections.Stats(ctx, "c-1")
		require.NoError(t, err)
		require.EqualValues(t, 5, st.EnrollmentsTotal, "settling changes nothing")
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

	t.Run("roster: a duplicate changes nothing, its as-of included", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		roster := projection.NewRosterProjector(p.Inbox)
		ada, adaLeaves := created(t, "c-1", "e-1", "s-1", t0), cancelled(t, "c-1", "e-1", "s-1", t0.Add(time.Hour))
		grace := created(t, "c-1", "e-2", "s-2", t0.Add(time.Minute))
		require.NoError(t, roster.Apply(ctx, ada))
		require.NoError(t, roster.Apply(ctx, grace))
		before, err := p.Projections.Roster(ctx, "c-1")
		require.NoError(t, err)
		require.Len(t, before.Students, 2)
		for range 3 {
			require.ErrorIs(t, roster.Apply(ctx, ada), inbox.ErrDuplicate)
			require.ErrorIs(t, roster.Apply(ctx, grace), inbox.ErrDuplicate)
		}
		// A batch holding them again fails and applies nothing, the new
		// event included; the projector then settles each.
		fresh := created(t, "c-1", "e-3", "s-3", t0.Add(2*time.Minute))
		require.Error(t, p.Inbox.ApplyAllOnce(ctx, projection.ConsumerRoster, rosterBatch(t, ada, fresh)))
		after, err := p.Projections.Roster(ctx, "c-1")
		require.NoError(t, err)
		require.Equal(t, before, after, "nothing moved, as_of included")

		errs := roster.ApplyAll(ctx, []events.Envelope{ada, fresh, adaLeaves})
		require.ErrorIs(t, errs[0], inbox.ErrDuplicate)
		require.NoError(t, errs[1])
		require.NoError(t, errs[2])
		left, err := p.Projections.Roster(ctx, "c-1")
		require.NoError(t, err)
		require.Equal(t, []projection.Student{{StudentID: "s-2", EnrolledAt: t0.Add(time.Minute)}, {StudentID: "s-3", EnrolledAt: t0.Add(2 * time.Minute)}}, left.Students)
		for range 2 {
			require.ErrorIs(t, roster.Apply(ctx, adaLeaves), inbox.ErrDuplicate)
		}
		again, err := p.Projections.Roster(ctx, "c-1")
		require.NoError(t, err)
		require.Equal(t, left, again, "a repeated cancellation moves nothing either")
	})

	t.Run("roster: the same id with other content for one entry is a contract conflict", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		roster := projection.NewRosterProjector(p.Inbox)
		ada := created(t, "c-1", "e-1", "s-1", t0)
		require.NoError(t, roster.Apply(ctx, ada))
		before, err := p.Projections.Roster(ctx, "c-1")
		require.NoError(t, err)

		otherStudent := created(t, "c-1", "e-1", "mallory", t0)
		otherStudent.EventID = ada.EventID
		asCancellation := cancelled(t, "c-1", "e-1", "s-1", t0.Add(time.Hour))
		asCancellation.EventID = ada.EventID
		secondCreation := created(t, "c-1", "e-1", "s-1", t0) // another event id adding the same entry
		for name, env := range map[string]events.Envelope{
			"same id, other student": otherStudent, "same id, a cancellation": asCancellation, "another id, same entry": secondCreation,
		} {
			err := roster.Apply(ctx, env)
			require.ErrorIs(t, err, inbox.ErrContractConflict, name)
			require.NotErrorIs(t, err, inbox.ErrDuplicate, name)
			require.Error(t, p.Inbox.ApplyAllOnce(ctx, projection.ConsumerRoster, rosterBatch(t, env)), name)
		}
		after, err := p.Projections.Roster(ctx, "c-1")
		require.NoError(t, err)
		require.Equal(t, before, after, "the conflicting deliveries changed nothing")
		require.ErrorIs(t, roster.Apply(ctx, ada), inbox.ErrDuplicate, "the original is still recognised")
	})

	t.Run("roster: a cancellation before its creation leaves the entry removed", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		roster := projection.NewRosterProjector(p.Inbox)
		// One by one.
		leaves, joins := cancelled(t, "c-1", "e-1", "s-1", t0.Add(time.Hour)), created(t, "c-1", "e-1", "s-1", t0)
		require.NoError(t, roster.Apply(ctx, leaves))
		require.NoError(t, roster.Apply(ctx, joins))
		// In one batch, with another class's enrollment: both of an entry's
		// events merge into one write.
		leaves2, joins2 := cancelled(t, "c-2", "e-2", "s-2", t0.Add(time.Hour)), created(t, "c-2", "e-2", "s-2", t0)
		stays := created(t, "c-2", "e-3", "s-3", t0)
		require.NoError(t, p.Inbox.ApplyAllOnce(ctx, projection.ConsumerRoster, rosterBatch(t, leaves2, joins2, stays)))

		r, err := p.Projections.Roster(ctx, "c-1")
		require.NoError(t, err)
		require.Empty(t, r.Students)
		require.False(t, r.AsOf.IsZero())
		r, err = p.Projections.Roster(ctx, "c-2")
		require.NoError(t, err)
		require.Equal(t, []projection.Student{{StudentID: "s-3", EnrolledAt: t0}}, r.Students)
		for _, env := range []events.Envelope{leaves, joins, leaves2, joins2, stays} {
			require.ErrorIs(t, roster.Apply(ctx, env), inbox.ErrDuplicate)
		}
	})

	t.Run("roster: a batch holding an applied event fails and ApplyOnce settles it", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		var envs []events.Envelope
		for i := range 5 {
			envs = append(envs, created(t, "c-1", fmt.Sprintf("e-%d", i), fmt.Sprintf("s-%d", i), t0.Add(time.Duration(i)*time.Second)))
		}
		batch := rosterBatch(t, envs...)
		require.NoError(t, p.Inbox.ApplyOnce(ctx, projection.ConsumerRoster, batch[2].Event, batch[2].Effects))
		require.Error(t, p.Inbox.ApplyAllOnce(ctx, projection.ConsumerRoster, batch))
		r, err := p.Projections.Roster(ctx, "c-1")
		require.NoError(t, err)
		require.Len(t, r.Students, 1, "the cancelled batch applied nothing")
		applied, dups := 0, 0
		for _, a := range batch {
			switch err := p.Inbox.ApplyOnce(ctx, projection.ConsumerRoster, a.Event, a.Effects); {
			case err == nil:
				applied++
			case errors.Is(err, inbox.ErrDuplicate):
				dups++
			default:
				t.Fatalf("apply once: %v", err)
			}
		}
		require.Equal(t, 4, applied)
		require.Equal(t, 1, dups)
		r, err = p.Projections.Roster(ctx, "c-1")
		require.NoError(t, err)
		require.Len(t, r.Students, 5, "each listed once")
	})

	t.Run("invalid consumer name", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		env := created(t, "c-1", "e-1", "s-1", t0)
		require.Error(t, p.Inbox.ApplyOnce(context.Background(), "Bad#Name", env, nil))
	})
}
