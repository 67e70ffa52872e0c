package enrollment_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/enrollment"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func TestNewValidates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                        string
		id, class, student, teacher string
		at                          time.Time
		wantField                   string
	}{
		{"valid", "e", "c", "s", "t", t0, ""},
		{"no id", "", "c", "s", "t", t0, "enrollment_id"},
		{"no class", "e", "", "s", "t", t0, "class_id"},
		{"no student", "e", "c", "", "t", t0, "student_id"},
		{"no teacher", "e", "c", "s", "", t0, "teacher_id"},
		{"no time", "e", "c", "s", "t", time.Time{}, "created_at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := enrollment.New(tt.id, tt.class, tt.student, tt.teacher, tt.at)
			if tt.wantField == "" {
				require.NoError(t, err)
				require.Equal(t, enrollment.StatusEnrolled, e.Status())
				require.Equal(t, enrollment.NotificationPending, e.Notification().Status())
				require.Zero(t, e.Notification().Attempts())
				return
			}
			var ve *club.ValidationError
			require.True(t, errors.As(err, &ve))
			require.Equal(t, tt.wantField, ve.Field)
		})
	}
}

func TestCancelAndVisibility(t *testing.T) {
	t.Parallel()
	e, err := enrollment.New("e", "c", "student", "teacher", t0)
	require.NoError(t, err)
	require.True(t, e.VisibleTo("student"))
	require.True(t, e.VisibleTo("teacher"))
	require.False(t, e.VisibleTo("someone"))
	require.False(t, e.VisibleTo(""))

	copyBefore := e
	require.NoError(t, e.Cancel(t0.Add(time.Hour)))
	require.Equal(t, enrollment.StatusCancelled, e.Status())
	require.Equal(t, t0.Add(time.Hour), e.CancelledAt())
	require.Equal(t, enrollment.StatusEnrolled, copyBefore.Status(), "values are independent")
	require.ErrorIs(t, e.Cancel(t0.Add(2*time.Hour)), enrollment.ErrNotEnrolled)
	require.Equal(t, t0.Add(time.Hour), e.CancelledAt(), "a second cancel changes nothing")

	e.CaptureAddress("ann@example.com")
	require.Equal(t, e, enrollment.FromSnapshot(e.Snapshot()), "snapshot round-trips")
}

func TestNotificationTransitions(t *testing.T) {
	t.Parallel()
	type step func(*enrollment.Notification) error
	begin := (*enrollment.Notification).BeginAttempt
	sent := func(n *enrollment.Notification) error { n.MarkSent(t0); return nil }
	sentLater := func(n *enrollment.Notification) error { n.MarkSent(t0.Add(time.Hour)); return nil }
	failed := func(n *enrollment.Notification) error { n.MarkFailed(); return nil }
	unknown := func(n *enrollment.Notification) error { n.MarkUnknown(); return nil }

	tests := []struct {
		name         string
		steps        []step
		wantStatus   enrollment.NotificationStatus
		wantAttempts int
		wantErr      error // of the last step
	}{
		{"starts pending", nil, enrollment.NotificationPending, 0, nil},
		{"attempt stays pending", []step{begin}, enrollment.NotificationPending, 1, nil},
		{"attempt then sent", []step{begin, sent}, enrollment.NotificationSent, 1, nil},
		{"sent is final for attempts", []step{begin, sent, begin}, enrollment.NotificationSent, 1, enrollment.ErrAlreadySent},
		{"sent is final for failure", []step{begin, sent, failed}, enrollment.NotificationSent, 1, nil},
		{"sent is final for unknown", []step{begin, sent, unknown}, enrollment.NotificationSent, 1, nil},
		{"first sent time is kept", []step{sent, sentLater}, enrollment.NotificationSent, 0, nil},
		{"unknown result", []step{begin, unknown}, enrollment.NotificationUnknown, 1, nil},
		{"retry of unknown stays unknown", []step{begin, unknown, begin}, enrollment.NotificationUnknown, 2, nil},
		{"unknown resolved as sent", []step{begin, unknown, begin, sent}, enrollment.NotificationSent, 2, nil},
		{"given up", []step{begin, failed}, enrollment.NotificationFailed, 1, nil},
		{"replay after failure tries again", []step{begin, failed, begin}, enrollment.NotificationPending, 2, nil},
		{"failed then sent", []step{begin, failed, begin, sent}, enrollment.NotificationSent, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := enrollment.New("e", "c", "s", "t", t0)
			require.NoError(t, err)
			n := e.Notification()
			var last error
			for _, s := range tt.steps {
				last = s(&n)
			}
			require.ErrorIs(t, last, tt.wantErr)
			if tt.wantErr == nil {
				require.NoError(t, last)
			}
			require.Equal(t, tt.wantStatus, n.Status())
			require.Equal(t, tt.wantAttempts, n.Attempts())
			if n.Status() == enrollment.NotificationSent {
				require.Equal(t, t0, n.SentAt())
			} else {
				require.True(t, n.SentAt().IsZero())
			}
		})
	}
}
