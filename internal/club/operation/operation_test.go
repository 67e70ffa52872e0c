package operation_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/operation"
)

var t0 = time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)

func pending(t *testing.T) operation.Operation {
	t.Helper()
	op, err := operation.NewRosterExport("op-1", "class-1", "teacher-1", t0)
	require.NoError(t, err)
	return op
}

func TestNewRosterExportValidates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id, classID, by string
		at              time.Time
		field           string
	}{
		{"", "c", "u", t0, "operation_id"},
		{"op", "", "u", t0, "class_id"},
		{"op", "c", "", t0, "created_by"},
		{"op", "c", "u", time.Time{}, "created_at"},
	}
	for _, tt := range tests {
		_, err := operation.NewRosterExport(tt.id, tt.classID, tt.by, tt.at)
		ve, ok := errors.AsType[*club.ValidationError](err)
		require.True(t, ok, "%+v: %v", tt, err)
		require.Equal(t, tt.field, ve.Field)
	}
	op := pending(t)
	require.Equal(t, operation.KindRosterExport, op.Kind())
	require.Equal(t, operation.StatusPending, op.Status())
	require.Equal(t, t0, op.UpdatedAt())
	_, ok := op.Result()
	require.False(t, ok)
}

// Every method from every status: what it does, or which error refuses it.
func TestTransitions(t *testing.T) {
	t.Parallel()
	result := operation.Result{URL: "https://x/y", Rows: 2, ExpiresAt: t0.Add(time.Hour)}
	failure := operation.Failure{Code: operation.FailureRetriesExhausted, Message: "gave up"}
	at := func(s operation.Status) operation.Operation {
		op := pending(t)
		switch s {
		case operation.StatusRunning:
			require.NoError(t, op.Start(t0))
		case operation.StatusSucceeded:
			require.NoError(t, op.Start(t0))
			require.NoError(t, op.Succeed(result, t0))
		case operation.StatusFailed:
			require.NoError(t, op.Fail(failure, t0))
		}
		return op
	}
	type method struct {
		name string
		call func(*operation.Operation) error
	}
	start := method{"Start", func(o *operation.Operation) error { return o.Start(t0.Add(time.Second)) }}
	succeed := method{"Succeed", func(o *operation.Operation) error { return o.Succeed(result, t0.Add(time.Second)) }}
	fail := method{"Fail", func(o *operation.Operation) error { return o.Fail(failure, t0.Add(time.Second)) }}
	tests := []struct {
		from    operation.Status
		m       method
		to      operation.Status
		wantErr error
	}{
		{operation.StatusPending, start, operation.StatusRunning, nil},
		{operation.StatusPending, succeed, operation.StatusPending, operation.ErrNotRunning},
		{operation.StatusPending, fail, operation.StatusFailed, nil},
		{operation.StatusRunning, start, operation.StatusRunning, nil},
		{operation.StatusRunning, succeed, operation.StatusSucceeded, nil},
		{operation.StatusRunning, fail, operation.StatusFailed, nil},
		{operation.StatusSucceeded, start, operation.StatusSucceeded, operation.ErrFinished},
		{operation.StatusSucceeded, succeed, operation.StatusSucceeded, operation.ErrFinished},
		{operation.StatusSucceeded, fail, operation.StatusSucceeded, operation.ErrFinished},
		{operation.StatusFailed, start, operation.StatusFailed, operation.ErrFinished},
		{operation.StatusFailed, succeed, operation.StatusFailed, operation.ErrFinished},
		{operation.StatusFailed, fail, operation.StatusFailed, operation.ErrFinished},
	}
	for _, tt := range tests {
		t.Run(string(tt.from)+" "+tt.m.name, func(t *testing.T) {
			op := at(tt.from)
			before := op
			err := tt.m.call(&op)
			require.ErrorIs(t, err, tt.wantErr)
			require.Equal(t, tt.to, op.Status())
			if tt.to == tt.from {
				require.True(t, op.Equal(before), "nothing changed")
				return
			}
			h := op.History()
			require.Equal(t, operation.HistoryEntry{Status: tt.to, At: t0.Add(time.Second)}, h[len(h)-1])
			require.Equal(t, t0.Add(time.Second), op.UpdatedAt())
		})
	}
}

func TestSucceedNeedsACompleteResult(t *testing.T) {
	t.Parallel()
	for _, r := range []operation.Result{
		{Rows: 1, ExpiresAt: t0},
		{URL: "https://x", Rows: -1, ExpiresAt: t0},
		{URL: "https://x", Rows: 1},
	} {
		op := pending(t)
		require.NoError(t, op.Start(t0))
		require.Error(t, op.Succeed(r, t0), "%+v", r)
		require.Equal(t, operation.StatusRunning, op.Status())
	}
	op := pending(t)
	require.Error(t, op.Fail(operation.Failure{Message: "no code"}, t0))
}

func TestVisibleToItsCreatorOnly(t *testing.T) {
	t.Parallel()
	op := pending(t)
	require.True(t, op.VisibleTo("teacher-1"))
	require.False(t, op.VisibleTo("teacher-2"))
	require.False(t, op.VisibleTo(""))
}

func TestNewServiceNeedsAStore(t *testing.T) {
	t.Parallel()
	_, err := operation.NewService(operation.Deps{})
	require.ErrorContains(t, err, "Store is required")
}

// A teacher report's id depends on the teacher and the UTC day only: every
// fire of one night's schedule names the same operation.
func TestTeacherReportID(t *testing.T) {
	t.Parallel()
	night := time.Date(2026, 3, 5, 2, 0, 0, 0, time.UTC)
	id := operation.TeacherReportID("teacher-1", night)
	require.Regexp(t, `^op-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, id, "a name-based UUID, a valid id")
	require.Equal(t, id, operation.TeacherReportID("teacher-1", night.Add(21*time.Hour+59*time.Minute)), "later the same day")
	require.Equal(t, id, operation.TeacherReportID("teacher-1", time.Date(2026, 3, 5, 1, 0, 0, 0, time.FixedZone("CET", 3600))), "the UTC day")
	require.NotEqual(t, id, operation.TeacherReportID("teacher-1", night.Add(22*time.Hour)), "the next day")
	require.NotEqual(t, id, operation.TeacherReportID("teacher-2", night), "another teacher")
	require.NotEqual(t, operation.TeacherReportID("a\x00b", night), operation.TeacherReportID("a", night))
}

func TestNewTeacherReport(t *testing.T) {
	t.Parallel()
	op, err := operation.NewTeacherReport("op-r", "teacher-1", t0)
	require.NoError(t, err)
	require.Equal(t, operation.KindTeacherReport, op.Kind())
	require.Equal(t, "teacher-1", op.CreatedBy())
	require.Empty(t, op.ClassID())
	require.Equal(t, operation.StatusPending, op.Status())
	require.True(t, op.VisibleTo("teacher-1"))
	for _, tc := range []struct {
		id, teacher string
		at          time.Time
		field       string
	}{
		{"", "teacher-1", t0, "operation_id"},
		{"op-r", "", t0, "created_by"},
		{"op-r", "teacher-1", time.Time{}, "created_at"},
	} {
		_, err := operation.NewTeacherReport(tc.id, tc.teacher, tc.at)
		var ve *club.ValidationError
		require.True(t, errors.As(err, &ve), tc.field)
		require.Equal(t, tc.field, ve.Field)
	}
}
