package clock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/localcloud/sfn/clock"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestVirtualFiresInOrder(t *testing.T) {
	t.Parallel()
	v := clock.NewVirtual(start)
	var mu sync.Mutex
	var fired []string
	at := map[string]time.Time{}
	record := func(name string) func() {
		return func() {
			mu.Lock()
			defer mu.Unlock()
			fired = append(fired, name)
			at[name] = v.Now()
		}
	}
	v.AfterFunc(3*time.Second, record("c"))
	v.AfterFunc(time.Second, record("a"))
	v.AfterFunc(time.Second, record("b")) // same deadline: creation order
	stopped := v.AfterFunc(2*time.Second, record("stopped"))
	require.True(t, stopped.Stop())
	require.False(t, stopped.Stop())
	require.Equal(t, 3, v.Pending())

	v.Advance(2 * time.Second)
	require.Equal(t, []string{"a", "b"}, fired)
	require.Equal(t, start.Add(time.Second), at["a"], "Now reads the timer's deadline while it fires")
	require.Equal(t, start.Add(2*time.Second), v.Now())
	v.Advance(time.Hour)
	require.Equal(t, []string{"a", "b", "c"}, fired)
	require.Equal(t, start.Add(time.Hour+2*time.Second), v.Now())
}

func TestVirtualAfter(t *testing.T) {
	t.Parallel()
	v := clock.NewVirtual(start)
	ch := v.After(time.Minute)
	v.Advance(time.Minute)
	require.Equal(t, start.Add(time.Minute), <-ch)
}

// AutoAdvance jumps to the next timer only while nothing holds.
func TestAutoAdvanceWaitsForHolds(t *testing.T) {
	t.Parallel()
	v := clock.NewVirtual(start)
	v.Hold()
	fired := make(chan time.Time, 1)
	v.AfterFunc(15*time.Minute, func() { fired <- v.Now() })
	stop := v.AutoAdvance()
	defer stop()
	require.Equal(t, start, v.Now(), "time does not move while a hold is active")
	require.Equal(t, 1, v.Pending())
	v.Release()
	select {
	case at := <-fired:
		require.Equal(t, start.Add(15*time.Minute), at)
	case <-time.After(patience.Wait()):
		t.Fatal("time did not move once idle")
	}
}

func TestWaitIdle(t *testing.T) {
	t.Parallel()
	v := clock.NewVirtual(start)
	require.NoError(t, v.WaitIdle(context.Background()))
	v.Hold()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond) // patience:exempt a context that ends before the clock is idle is what is tested
	defer cancel()
	require.ErrorIs(t, v.WaitIdle(ctx), context.DeadlineExceeded)
	go v.Release()
	require.NoError(t, v.WaitIdle(context.Background()))
}

func TestRealClock(t *testing.T) {
	t.Parallel()
	var c clock.Clock = clock.Real{}
	done := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(done) })
	<-done
	<-c.After(time.Millisecond)
	require.WithinDuration(t, time.Now(), c.Now(), time.Second)
}
