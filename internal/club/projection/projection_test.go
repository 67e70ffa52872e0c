package projection_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
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

func (n nilInbox) ApplyAllOnce(context.Context, string, []projection.Application) error {
	n.t.Error("ApplyAllOnce called for events the consumer does not use")
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

func (failingInbox) ApplyAllOnce(context.Context, string, []projection.Application) error {
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

// countingInbox counts the calls to the in-memory inbox it wraps.
type countingInbox struct {
	*memstore.Inbox
	once, all atomic.Int32
}

func (c *countingInbox) ApplyOnce(ctx context.Context, consumer string, env events.Envelope, effects []projection.Effect) error {
	c.once.Add(1)
	return c.Inbox.ApplyOnce(ctx, consumer, env, effects)
}

func (c *countingInbox) ApplyAllOnce(ctx context.Context, consumer string, batch []projection.Application) error {
	c.all.Add(1)
	return c.Inbox.ApplyAllOnce(ctx, consumer, batch)
}

// countedMemstore is an in-memory store whose inbox calls are counted.
func countedMemstore() (*memstore.Store, *countingInbox) {
	mem := memstore.New()
	return mem, &countingInbox{Inbox: mem.Inbox}
}

// enrollmentIn is the creation of enrollment e-<i> of student s-<i> in
// classID, at at.
func enrollmentIn(t *testing.T, classID string, i int, at time.Time) events.Envelope {
	t.Helper()
	env, err := events.New(events.NewID(), at, events.EnrollmentCreated{
		EnrollmentID: fmt.Sprintf("e-%d", i), ClassID: classID, StudentID: fmt.Sprintf("s-%d", i),
	})
	require.NoError(t, err)
	return env
}

// TestApplyAllCommitsABatchTogether: ten events are one inbox call; a batch
// holding an event applied before commits the others together, and the
// store's reading of its record answers for that one (projection.AlreadyRecorded),
// an event twice in a batch is applied once with the others and again on its
// own, and every event still counts once.
func TestApplyAllCommitsABatchTogether(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	newEvent := func(i int) events.Envelope { return enrollmentIn(t, "c", i, at) }
	mem, ib := countedMemstore()
	p := projection.NewStatsProjector(ib)
	ctx := context.Background()
	total := func() int64 {
		st, err := mem.Projections.Stats(ctx, "c")
		require.NoError(t, err)
		return st.EnrollmentsTotal
	}

	var batch []events.Envelope
	for i := range 10 {
		batch = append(batch, newEvent(i))
	}
	require.Equal(t, make([]error, 10), p.ApplyAll(ctx, batch))
	require.EqualValues(t, 1, ib.all.Load())
	require.Zero(t, ib.once.Load())
	require.EqualValues(t, 10, total())

	// A redelivered event among new ones, and a new one twice.
	fresh, twice := newEvent(10), newEvent(11)
	unused, err := events.New(events.NewID(), at, events.ExportRequested{OperationID: "op", Kind: events.ExportKindRosterExport, ClassID: "c", RequestedBy: "t"})
	require.NoError(t, err)
	broken := newEvent(12)
	broken.Data = []byte(`{"enrollment_id":"e"}`)
	errs := p.ApplyAll(ctx, []events.Envelope{batch[3], fresh, twice, twice, unused, broken})
	require.ErrorIs(t, errs[0], inbox.ErrDuplicate)
	require.NoError(t, errs[1])
	require.NoError(t, errs[2])
	require.ErrorIs(t, errs[3], inbox.ErrDuplicate, "the second copy in one batch is a duplicate")
	require.NoError(t, errs[4], "an event the consumer does not use")
	require.ErrorIs(t, errs[5], events.ErrMalformed)
	require.EqualValues(t, 2, ib.all.Load())
	require.EqualValues(t, 1, ib.once.Load(), "after the batch only the repeat: the store settled the recorded event from its record")
	require.EqualValues(t, 12, total(), "each event counted once")
}

// TestApplyAllWritesEntriesOnTheirOwn: the roster's applications are each
// recorded on their entry, so a batch is never committed together (a
// transaction would only bill each entry twice): each event is one
// ApplyOnce, a redelivered one among them is a duplicate on its own, and an
// enrollment with its cancellation in one batch leaves the entry removed.
func TestApplyAllWritesEntriesOnTheirOwn(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	joins := func(i int) events.Envelope { return enrollmentIn(t, "c", i, at.Add(time.Duration(i)*time.Minute)) }
	mem, ib := countedMemstore()
	p := projection.NewRosterProjector(ib)
	ctx := context.Background()
	students := func() int {
		r, err := mem.Projections.Roster(ctx, "c")
		require.NoError(t, err)
		return len(r.Students)
	}

	var batch []events.Envelope
	for i := range 10 {
		batch = append(batch, joins(i))
	}
	require.Equal(t, make([]error, 10), p.ApplyAll(ctx, batch))
	require.Zero(t, ib.all.Load(), "no batch commit for entries")
	require.EqualValues(t, 10, ib.once.Load())
	require.Equal(t, 10, students())

	leaves, err := events.New(events.NewID(), at.Add(time.Hour), events.EnrollmentCancelled{EnrollmentID: "e-10", ClassID: "c", StudentID: "s-10"})
	require.NoError(t, err)
	errs := p.ApplyAll(ctx, []events.Envelope{batch[3], joins(10), leaves, joins(11)})
	require.ErrorIs(t, errs[0], inbox.ErrDuplicate)
	require.Equal(t, []error{nil, nil, nil}, errs[1:])
	require.Zero(t, ib.all.Load())
	require.EqualValues(t, 14, ib.once.Load(), "one call per event, no second round")
	require.Equal(t, 11, students(), "e-10 joined and left in one batch; e-11 joined")
}

// TestRecordedOnEntry: only the roster consumer's applications of one roster
// effect are recorded on their entry; everything else keeps its inbox row.
func TestRecordedOnEntry(t *testing.T) {
	t.Parallel()
	add := projection.AddToRoster{ClassID: "c", EnrollmentID: "e", StudentID: "s"}
	remove := projection.RemoveFromRoster{ClassID: "c", EnrollmentID: "e"}
	count := projection.CountStats{ClassID: "c", Enrollments: 1}
	tests := []struct {
		consumer string
		effects  []projection.Effect
		want     bool
	}{
		{projection.ConsumerRoster, []projection.Effect{add}, true},
		{projection.ConsumerRoster, []projection.Effect{remove}, true},
		{projection.ConsumerRoster, []projection.Effect{count}, false},
		{projection.ConsumerRoster, []projection.Effect{add, remove}, false},
		{projection.ConsumerRoster, nil, false},
		{projection.ConsumerAnalytics, []projection.Effect{add}, false},
		{"bulk", []projection.Effect{remove}, false},
	}
	for _, tt := range tests {
		eff, ok := projection.RecordedOnEntry(tt.consumer, tt.effects)
		require.Equal(t, tt.want, ok, "%s %v", tt.consumer, tt.effects)
		if ok {
			require.Equal(t, tt.effects[0], eff)
		}
	}
}

// TestEntryRecord: what an entry admits, and how a refused delivery is
// classified.
func TestEntryRecord(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	joins, err := events.New(events.NewID(), at, events.EnrollmentCreated{EnrollmentID: "e", ClassID: "c", StudentID: "s"})
	require.NoError(t, err)
	leaves, err := events.New(events.NewID(), at, events.EnrollmentCancelled{EnrollmentID: "e", ClassID: "c", StudentID: "s"})
	require.NoError(t, err)
	add, remove := projection.AddToRoster{ClassID: "c", EnrollmentID: "e"}, projection.RemoveFromRoster{ClassID: "c", EnrollmentID: "e"}

	var empty projection.EntryRecord
	require.True(t, empty.Admits(joins.EventID, add))
	require.True(t, empty.Admits(leaves.EventID, remove))
	require.NoError(t, empty.Check(joins, add), "nothing refuses it")

	removed := projection.EntryRecord{CancelledEvent: leaves.EventID, CancelledFingerprint: leaves.Fingerprint()}
	require.True(t, removed.Admits(joins.EventID, add), "a creation after its cancellation")
	require.False(t, removed.Admits(leaves.EventID, remove))
	require.ErrorIs(t, removed.Check(leaves, remove), inbox.ErrDuplicate)

	changed := leaves
	changed.Data = []byte(`{"enrollment_id":"e","class_id":"c","student_id":"mallory"}`)
	require.ErrorIs(t, removed.Check(changed, remove), inbox.ErrContractConflict, "same id, other content")

	reused := joins
	reused.EventID = leaves.EventID
	require.False(t, removed.Admits(reused.EventID, add), "the cancellation's id reused for the creation")
	require.ErrorIs(t, removed.Check(reused, add), inbox.ErrContractConflict)

	again, err := events.New(events.NewID(), at, events.EnrollmentCancelled{EnrollmentID: "e", ClassID: "c", StudentID: "s"})
	require.NoError(t, err)
	require.False(t, removed.Admits(again.EventID, remove))
	err = removed.Check(again, remove)
	require.ErrorIs(t, err, inbox.ErrContractConflict, "another event removing the same entry")
	require.ErrorContains(t, err, leaves.EventID, "the reason names the recorded event")
}
