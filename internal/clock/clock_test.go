package clock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/clock"
)

func TestFakeFiresOnlyWhenDeadlineReached(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := clock.NewFake(start)

	short := c.After(time.Second)
	long := c.After(time.Minute)
	require.Equal(t, 2, c.Waiters())

	c.Advance(999 * time.Millisecond)
	require.Empty(t, short)

	c.Advance(time.Millisecond)
	require.Equal(t, start.Add(time.Second), <-short)
	require.Empty(t, long)
	require.Equal(t, 1, c.Waiters())

	c.Advance(time.Hour)
	require.Equal(t, start.Add(time.Hour+time.Second), <-long)
	require.Zero(t, c.Waiters())
	require.Equal(t, start.Add(time.Hour+time.Second), c.Now())
}

func TestFakeAfterNonPositiveFiresAtOnce(t *testing.T) {
	t.Parallel()
	c := clock.NewFake(time.Unix(0, 0))
	require.Len(t, c.After(0), 1)
	require.Len(t, c.After(-time.Second), 1)
	require.Zero(t, c.Waiters())
}
