package class_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/class"
)

func TestNewValidates(t *testing.T) {
	t.Parallel()
	starts := time.Date(2026, 4, 1, 17, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		id        string
		teacher   string
		title     string
		capacity  int
		startsAt  time.Time
		wantField string
	}{
		{"valid", "c-1", "t-1", "Go", 10, starts, ""},
		{"smallest", "c-1", "t-1", "Go", 1, starts, ""},
		{"largest", "c-1", "t-1", "Go", 10000, starts, ""},
		{"title of 200 runes", "c-1", "t-1", strings.Repeat("я", 200), 5, starts, ""},
		{"no id", "", "t-1", "Go", 10, starts, "class_id"},
		{"no teacher", "c-1", "", "Go", 10, starts, "teacher_id"},
		{"empty title", "c-1", "t-1", "", 10, starts, "title"},
		{"blank title", "c-1", "t-1", "   ", 10, starts, "title"},
		{"long title", "c-1", "t-1", strings.Repeat("a", 201), 10, starts, "title"},
		{"zero capacity", "c-1", "t-1", "Go", 0, starts, "capacity"},
		{"negative capacity", "c-1", "t-1", "Go", -3, starts, "capacity"},
		{"huge capacity", "c-1", "t-1", "Go", 10001, starts, "capacity"},
		{"no start", "c-1", "t-1", "Go", 10, time.Time{}, "starts_at"},
		{"first invalid field wins", "c-1", "t-1", "", 0, time.Time{}, "title"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := class.New(tt.id, tt.teacher, tt.title, tt.capacity, tt.startsAt)
			if tt.wantField == "" {
				require.NoError(t, err)
				require.Equal(t, tt.capacity, c.SeatsLeft())
				require.Zero(t, c.SeatsTaken())
				return
			}
			var ve *club.ValidationError
			require.True(t, errors.As(err, &ve), "want a validation error, got %v", err)
			require.Equal(t, tt.wantField, ve.Field)
		})
	}
}

func TestSeats(t *testing.T) {
	t.Parallel()
	c, err := class.New("c-1", "t-1", "  Go  ", 2, time.Date(2026, 4, 1, 19, 0, 0, 0, time.FixedZone("X", 7200)))
	require.NoError(t, err)
	require.Equal(t, "Go", c.Title())
	require.Equal(t, time.Date(2026, 4, 1, 17, 0, 0, 0, time.UTC), c.StartsAt())

	require.NoError(t, c.TakeSeat())
	require.NoError(t, c.TakeSeat())
	require.True(t, c.Full())
	require.ErrorIs(t, c.TakeSeat(), club.ErrClassFull)
	require.Equal(t, 2, c.SeatsTaken())
	require.Zero(t, c.SeatsLeft())

	c.ReleaseSeat()
	require.Equal(t, 1, c.SeatsLeft())
	c.ReleaseSeat()
	c.ReleaseSeat()
	require.Zero(t, c.SeatsTaken(), "never below zero")

	require.Equal(t, c, class.FromSnapshot(c.Snapshot()), "snapshot round-trips")
}
