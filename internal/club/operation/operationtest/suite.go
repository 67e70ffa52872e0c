package operationtest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/operation"
	"github.com/clubdev/club/internal/club/outbox"
)

// Ports is one implementation of the operation port, with the outbox its
// creations write to.
type Ports struct {
	Operations operation.Store
	// Outbox lists pending outbox rows (outbox.Store's Unpublished).
	Outbox OutboxLister
}

// OutboxLister is the part of outbox.Store the suite reads.
type OutboxLister interface {
	Unpublished(ctx context.Context, createdBefore time.Time, limit int) ([]outbox.Row, error)
}

// MemoryPorts returns the ports of a fresh Memory.
func MemoryPorts(*testing.T) Ports {
	m := NewMemory()
	return Ports{Operations: m, Outbox: m}
}

// Factory returns fresh, empty ports; it is called once per test case, from
// parallel tests.
type Factory func(t *testing.T) Ports

// Start is the instant the suite's clock starts at.
var Start = time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)

// Fixture is a Service over one set of ports, with a clock that the test
// moves.
type Fixture struct {
	T     *testing.T
	Ctx   context.Context
	Ports Ports
	Svc   *operation.Service
	now   atomic.Int64 // unix nanoseconds
}

// Setup returns a Fixture over fresh ports, with a clock reading Start.
func Setup(t *testing.T, newPorts Factory) *Fixture {
	t.Helper()
	f := &Fixture{T: t, Ctx: context.Background(), Ports: newPorts(t)}
	f.now.Store(Start.UnixNano())
	svc, err := operation.NewService(operation.Deps{Store: f.Ports.Operations, Now: f.Now})
	require.NoError(t, err)
	f.Svc = svc
	return f
}

// Now is the fixture's clock.
func (f *Fixture) Now() time.Time { return time.Unix(0, f.now.Load()).UTC() }

// Advance moves the fixture's clock forward.
func (f *Fixture) Advance(d time.Duration) { f.now.Add(int64(d)) }

// Export requests an export of classID by teacher and requires it to work.
func (f *Fixture) Export(classID, teacher string) operation.Operation {
	f.T.Helper()
	op, err := f.Svc.RequestRosterExport(f.Ctx, operation.ExportRequest{ClassID: classID, RequestedBy: teacher})
	require.NoError(f.T, err)
	return op
}

// Operation reads an operation.
func (f *Fixture) Operation(id string) operation.Operation {
	f.T.Helper()
	op, err := f.Ports.Operations.Get(f.Ctx, id)
	require.NoError(f.T, err)
	return op
}

// Update applies a change and requires it to succeed.
func (f *Fixture) Update(id string, change func(*operation.Operation) error) operation.Operation {
	f.T.Helper()
	op, err := f.Ports.Operations.Update(f.Ctx, id, change)
	require.NoError(f.T, err)
	return op
}

// Jobs returns the pending export.requested outbox rows of an operation.
func (f *Fixture) Jobs(operationID string) []outbox.Row {
	f.T.Helper()
	all, err := f.Ports.Outbox.Unpublished(f.Ctx, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), 1000)
	require.NoError(f.T, err)
	var rows []outbox.Row
	for _, r := range all {
		if r.AggregateID == operationID {
			rows = append(rows, r)
		}
	}
	return rows
}

func (f *Fixture) result(rows int) operation.Result {
	return operation.Result{URL: "https://exports.example/x.csv?sig=1", Rows: rows, ExpiresAt: f.Now().Add(time.Hour), ObjectKey: "exports/x.csv"}
}

// RunStore checks operation.Store.
func RunStore(t *testing.T, newPorts Factory) {
	t.Run("create writes the operation and its job together", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		op := f.Export("class-1", "teacher-1")
		stored := f.Operation(op.ID())
		require.True(t, op.Equal(stored), "stored %+v", stored.Snapshot())
		require.Equal(t, operation.StatusPending, stored.Status())
		require.Equal(t, Start, stored.CreatedAt())

		rows := f.Jobs(op.ID())
		require.Len(t, rows, 1)
		require.Equal(t, events.TypeExportRequested, rows[0].Type)
		env, err := rows[0].Envelope()
		require.NoError(t, err)
		job, err := env.ExportRequested()
		require.NoError(t, err)
		require.Equal(t, events.ExportRequested{
			OperationID: op.ID(), Kind: events.ExportKindRosterExport, ClassID: "class-1", RequestedBy: "teacher-1",
		}, job)
	})

	t.Run("a second creation with the same id writes nothing", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		op := f.Export("class-1", "teacher-1")
		env, err := events.New(events.NewID(), f.Now(), events.ExportRequested{
			OperationID: op.ID(), Kind: events.ExportKindRosterExport, ClassID: "class-2", RequestedBy: "teacher-2",
		})
		require.NoError(t, err)
		again, err := operation.NewRosterExport(op.ID(), "class-2", "teacher-2", f.Now())
		require.NoError(t, err)
		require.ErrorIs(t, f.Ports.Operations.Create(f.Ctx, operation.Creation{Operation: again, Event: env}), operation.ErrExists)
		require.Equal(t, "teacher-1", f.Operation(op.ID()).CreatedBy())
		require.Len(t, f.Jobs(op.ID()), 1, "no second job")
	})

	t.Run("statuses move forward and are kept with their history", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		op := f.Export("class-1", "teacher-1")
		f.Advance(time.Second)
		running := f.Update(op.ID(), func(o *operation.Operation) error { return o.Start(f.Now()) })
		require.Equal(t, operation.StatusRunning, running.Status())
		f.Advance(time.Second)
		want := f.Update(op.ID(), func(o *operation.Operation) error { return o.Succeed(f.result(3), f.Now()) })

		got := f.Operation(op.ID())
		require.Equal(t, want.Snapshot(), got.Snapshot(), "every field round-trips")
		res, ok := got.Result()
		require.True(t, ok)
		require.Equal(t, f.result(3), res)
		require.Equal(t, Start.Add(2*time.Second), got.UpdatedAt())
		require.Equal(t, []operation.HistoryEntry{
			{Status: operation.StatusPending, At: Start},
			{Status: operation.StatusRunning, At: Start.Add(time.Second)},
			{Status: operation.StatusSucceeded, At: Start.Add(2 * time.Second)},
		}, got.History())
	})

	t.Run("a finished operation never changes", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		done := f.Export("class-1", "teacher-1")
		f.Update(done.ID(), func(o *operation.Operation) error { return o.Start(f.Now()) })
		f.Update(done.ID(), func(o *operation.Operation) error { return o.Succeed(f.result(1), f.Now()) })
		failed := f.Export("class-1", "teacher-1")
		failure := operation.Failure{Code: operation.FailureClassNotFound, Message: "class class-1 is gone"}
		f.Update(failed.ID(), func(o *operation.Operation) error { return o.Fail(failure, f.Now()) })

		for _, id := range []string{done.ID(), failed.ID()} {
			before := f.Operation(id)
			f.Advance(time.Minute)
			for _, change := range []func(*operation.Operation) error{
				func(o *operation.Operation) error { return o.Start(f.Now()) },
				func(o *operation.Operation) error { return o.Succeed(f.result(9), f.Now()) },
				func(o *operation.Operation) error { return o.Fail(failure, f.Now()) },
			} {
				_, err := f.Ports.Operations.Update(f.Ctx, id, change)
				require.ErrorIs(t, err, operation.ErrFinished)
			}
			require.Equal(t, before.Snapshot(), f.Operation(id).Snapshot())
		}
		got, ok := f.Operation(failed.ID()).Failure()
		require.True(t, ok)
		require.Equal(t, failure, got)
	})

	t.Run("a failed change writes nothing", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		op := f.Export("class-1", "teacher-1")
		boom := errors.New("boom")
		_, err := f.Ports.Operations.Update(f.Ctx, op.ID(), func(o *operation.Operation) error {
			_ = o.Start(f.Now())
			return boom
		})
		require.ErrorIs(t, err, boom)
		require.Equal(t, operation.StatusPending, f.Operation(op.ID()).Status())

		_, err = f.Ports.Operations.Update(f.Ctx, op.ID(), func(o *operation.Operation) error { return o.Succeed(f.result(1), f.Now()) })
		require.ErrorIs(t, err, operation.ErrNotRunning)

		_, err = f.Ports.Operations.Update(f.Ctx, "op-missing", func(*operation.Operation) error { return nil })
		require.ErrorIs(t, err, operation.ErrNotFound)
		_, err = f.Ports.Operations.Get(f.Ctx, "op-missing")
		require.ErrorIs(t, err, operation.ErrNotFound)
		require.ErrorIs(t, err, club.ErrNotFound)
	})

	t.Run("concurrent workers finish an operation once", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		op := f.Export("class-1", "teacher-1")
		f.Update(op.ID(), func(o *operation.Operation) error { return o.Start(f.Now()) })
		const workers = 8
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for i := range workers {
			wg.Go(func() {
				_, errs[i] = f.Ports.Operations.Update(f.Ctx, op.ID(), func(o *operation.Operation) error {
					return o.Succeed(f.result(i), f.Now())
				})
			})
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			if err == nil {
				require.Equal(t, -1, won, "a second worker succeeded too")
				won = i
				continue
			}
			require.ErrorIs(t, err, operation.ErrFinished)
		}
		require.NotEqual(t, -1, won)
		res, ok := f.Operation(op.ID()).Result()
		require.True(t, ok)
		require.Equal(t, won, res.Rows, "the winner's result is the stored one")
		require.Len(t, f.Operation(op.ID()).History(), 3)
	})

	t.Run("a teacher report is asked for once per teacher and day", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		night := time.Date(2026, 3, 5, 2, 0, 0, 0, time.UTC)
		id, created, err := f.Svc.RequestTeacherReport(f.Ctx, "teacher-1", night)
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, operation.TeacherReportID("teacher-1", night), id)

		// The schedule fires again the same day, later: nothing new.
		f.Advance(time.Hour)
		again, created, err := f.Svc.RequestTeacherReport(f.Ctx, "teacher-1", night.Add(20*time.Hour))
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, id, again)

		op := f.Operation(id)
		require.Equal(t, operation.KindTeacherReport, op.Kind())
		require.Equal(t, "teacher-1", op.CreatedBy(), "the teacher is its creator")
		require.Empty(t, op.ClassID())
		require.Equal(t, operation.StatusPending, op.Status())
		require.Equal(t, Start, op.CreatedAt(), "as first created")
		rows := f.Jobs(id)
		require.Len(t, rows, 1, "one job")
		env, err := rows[0].Envelope()
		require.NoError(t, err)
		job, err := env.ExportRequested()
		require.NoError(t, err)
		require.Equal(t, events.ExportRequested{OperationID: id, Kind: events.ExportKindTeacherReport, RequestedBy: "teacher-1"}, job)

		next, created, err := f.Svc.RequestTeacherReport(f.Ctx, "teacher-1", night.Add(24*time.Hour))
		require.NoError(t, err)
		require.True(t, created, "the next day is another report")
		other, created, err := f.Svc.RequestTeacherReport(f.Ctx, "teacher-2", night)
		require.NoError(t, err)
		require.True(t, created, "another teacher's")
		require.Len(t, map[string]bool{id: true, next: true, other: true}, 3)
	})

	t.Run("a creator lists their operations newest first, page by page", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		var want []string // newest first
		for i := range 5 {
			f.Advance(time.Second)
			want = append([]string{f.Export(fmt.Sprintf("class-%d", i), "teacher-1").ID()}, want...)
			if i%2 == 0 {
				f.Advance(time.Second)
				id, _, err := f.Svc.RequestTeacherReport(f.Ctx, "teacher-1", f.Now().AddDate(0, 0, i))
				require.NoError(t, err)
				want = append([]string{id}, want...)
			}
		}
		f.Export("class-9", "teacher-2")

		list := func(kind operation.Kind, limit int) []string {
			var ids []string
			q := operation.ListQuery{CreatedBy: "teacher-1", Kind: kind, Limit: limit}
			for range 20 {
				page, err := f.Svc.List(f.Ctx, q)
				require.NoError(t, err)
				require.LessOrEqual(t, len(page.Operations), cmp.Or(limit, operation.DefaultListLimit))
				for _, op := range page.Operations {
					require.Equal(t, "teacher-1", op.CreatedBy())
					ids = append(ids, op.ID())
				}
				if page.Next == "" {
					return ids
				}
				q.After = page.Next
			}
			t.Fatal("the list never ended")
			return nil
		}
		require.Equal(t, want, list("", 0), "one page")
		require.Equal(t, want, list("", 2), "pages of two")
		var reports []string
		for _, id := range want {
			if f.Operation(id).Kind() == operation.KindTeacherReport {
				reports = append(reports, id)
			}
		}
		require.Len(t, reports, 3)
		require.Equal(t, reports, list(operation.KindTeacherReport, 2))
		require.Equal(t, reports, list(operation.KindTeacherReport, 1))

		page, err := f.Svc.List(f.Ctx, operation.ListQuery{CreatedBy: "teacher-3"})
		require.NoError(t, err)
		require.Empty(t, page.Operations)
		require.Empty(t, page.Next)

		// teacher-2 continues teacher-1's list: refused, or still only
		// their own.
		first, err := f.Svc.List(f.Ctx, operation.ListQuery{CreatedBy: "teacher-1", Limit: 1})
		require.NoError(t, err)
		require.NotEmpty(t, first.Next)
		stolen, err := f.Svc.List(f.Ctx, operation.ListQuery{CreatedBy: "teacher-2", After: first.Next})
		if err != nil {
			ve, ok := errors.AsType[*club.ValidationError](err)
			require.True(t, ok, "%v", err)
			require.Equal(t, "cursor", ve.Field)
		}
		for _, op := range stolen.Operations {
			require.Equal(t, "teacher-2", op.CreatedBy())
		}
	})

	t.Run("a list refuses what it cannot answer", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		for _, tc := range []struct {
			q     operation.ListQuery
			field string
		}{
			{operation.ListQuery{CreatedBy: "t", Kind: "pdf"}, "kind"},
			{operation.ListQuery{CreatedBy: "t", Limit: operation.MaxListLimit + 1}, "limit"},
			{operation.ListQuery{CreatedBy: "t", Limit: -1}, "limit"},
			{operation.ListQuery{CreatedBy: "t", After: "not a cursor"}, "cursor"},
			{operation.ListQuery{CreatedBy: "t", After: "eyJwayI6MX0"}, "cursor"},
		} {
			_, err := f.Svc.List(f.Ctx, tc.q)
			ve, ok := errors.AsType[*club.ValidationError](err)
			require.True(t, ok, "%+v: %v", tc.q, err)
			require.Equal(t, tc.field, ve.Field)
		}
	})

	t.Run("only the creator sees it", func(t *testing.T) {
		t.Parallel()
		f := Setup(t, newPorts)
		op := f.Export("class-1", "teacher-1")
		got, err := f.Svc.Get(f.Ctx, op.ID(), "teacher-1")
		require.NoError(t, err)
		require.Equal(t, op.ID(), got.ID())
		for _, caller := range []string{"teacher-2", "student-1", ""} {
			_, err := f.Svc.Get(f.Ctx, op.ID(), caller)
			require.ErrorIs(t, err, operation.ErrNotFound, "caller %q", caller)
		}
	})
}
