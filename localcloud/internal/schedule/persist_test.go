package schedule

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A persistent local cloud keeps each schedule's last fire: started again,
// a rate(1 hour) schedule whose hour passed while the local cloud was
// stopped fires at once (the latest missed time, once), then keeps its
// rhythm; one whose hour has not passed waits for what is left of it.
func TestRunCarriesOnFromTheLastFireOfAnEarlierRun(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var kept []time.Time
	onFire := func(at time.Time) { mu.Lock(); kept = append(kept, at); mu.Unlock() }

	// Stopped for four hours after a fire at start-4h: fire times -3h, -2h,
	// -1h and now passed.
	clock := newFakeClock(start)
	fn := &recorder{}
	r, err := New(Schedule{Name: "report", FunctionName: "f", Expression: "rate(1 hour)", Enabled: true}, fn, clock, quietLogger(),
		Options{LastFire: start.Add(-4 * time.Hour), OnFire: onFire})
	require.NoError(t, err)
	runInBackground(t, r)
	waitFor(t, "the missed fire", func() bool { return fn.count() == 1 })
	require.Equal(t, start, fn.events(t)[0].Time.UTC(), "the latest missed time (now), once")
	require.EqualValues(t, 3, r.Stats().Skipped)
	waitFor(t, "Run waits", func() bool { return clock.Waiters() == 1 })
	clock.Advance(time.Hour - time.Nanosecond)
	require.Equal(t, 1, fn.count(), "an hour after the missed fire, not after the start")
	clock.Advance(time.Nanosecond)
	waitFor(t, "the next fire", func() bool { return fn.count() == 2 })
	require.Equal(t, start.Add(time.Hour), fn.events(t)[1].Time.UTC())
	mu.Lock()
	require.Equal(t, []time.Time{start, start.Add(time.Hour)}, kept)
	mu.Unlock()

	// Stopped for twenty minutes after a fire: forty are left.
	clock2 := newFakeClock(start)
	fn2 := &recorder{}
	r2, err := New(Schedule{Name: "report", FunctionName: "f", Expression: "rate(1 hour)", Enabled: true}, fn2, clock2, quietLogger(),
		Options{LastFire: start.Add(-20 * time.Minute)})
	require.NoError(t, err)
	runInBackground(t, r2)
	waitFor(t, "Run waits", func() bool { return clock2.Waiters() == 1 })
	clock2.Advance(40*time.Minute - time.Nanosecond)
	require.Zero(t, fn2.count())
	clock2.Advance(time.Nanosecond)
	waitFor(t, "the fire", func() bool { return fn2.count() == 1 })
	require.Equal(t, start.Add(40*time.Minute), fn2.events(t)[0].Time.UTC())
}
