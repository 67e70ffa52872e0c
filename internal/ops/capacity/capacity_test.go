package capacity_test

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/ops/capacity"
)

func TestModel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		m        capacity.Model
		deadline time.Duration
		want     capacity.Verdict
	}{
		{"6000 at 100/s", capacity.Model{Backlog: 6000, Rate: 100}, 0,
			capacity.Verdict{Drains: true, DrainTime: 60 * time.Second, Holds: true}},
		{"with 80/s arriving", capacity.Model{Backlog: 6000, Arrival: 80, Rate: 100}, 0,
			capacity.Verdict{Drains: true, DrainTime: 300 * time.Second, Holds: true}},
		{"a 10 s promise cannot hold", capacity.Model{Backlog: 6000, Arrival: 80, Rate: 100}, 10 * time.Second,
			capacity.Verdict{Drains: true, DrainTime: 300 * time.Second, Deadline: 10 * time.Second, RequiredRate: 680, MaxBacklog: 200}},
		{"a 5 min promise holds", capacity.Model{Backlog: 6000, Arrival: 80, Rate: 100}, 5 * time.Minute,
			capacity.Verdict{Drains: true, DrainTime: 300 * time.Second, Deadline: 5 * time.Minute, Holds: true, RequiredRate: 100, MaxBacklog: 6000}},
		{"arrivals match the rate", capacity.Model{Backlog: 10, Arrival: 100, Rate: 100}, time.Minute,
			capacity.Verdict{Deadline: time.Minute, RequiredRate: 100 + 10.0/60}},
		{"no backlog", capacity.Model{Arrival: 120, Rate: 100}, 0,
			capacity.Verdict{Drains: true, Holds: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, tt.m.Validate())
			want := tt.want
			want.Model = tt.m
			got := tt.m.Evaluate(tt.deadline)
			require.InDelta(t, want.RequiredRate, got.RequiredRate, 1e-9)
			got.RequiredRate = want.RequiredRate
			require.Equal(t, want, got)
		})
	}
}

func TestModelValidate(t *testing.T) {
	t.Parallel()
	err := capacity.Model{Backlog: -1, Arrival: -2, Rate: 0}.Validate()
	require.ErrorContains(t, err, "backlog -1 must be a non-negative number")
	require.ErrorContains(t, err, "arrival -2 must be a non-negative number")
	require.ErrorContains(t, err, "rate 0 must be a positive number")
}

func TestSimulationMatchesTheModelWithoutFailures(t *testing.T) {
	t.Parallel()
	m := capacity.Model{Backlog: 6000, Arrival: 80, Rate: 100}
	for _, spread := range []float64{0, 0.5, 1} {
		r, err := capacity.Simulation{Model: m, Spread: spread, Seed: 7}.Run()
		require.NoError(t, err)
		require.True(t, r.Drained)
		require.InDelta(t, 300, r.DrainTime.Seconds(), 300*0.07, "spread %g: the model's 300 s, give or take the arrivals' randomness", spread)
		require.InDelta(t, 60, r.MaxWait.Seconds(), 5, "served in order, nobody waits much longer than backlog/rate")
		// At τ = 150 s the head arrived at t with B + A·t = R·τ: t = 112.5 s, 37.5 s ago.
		require.InDelta(t, 37.5, r.Curve[50].OldestAge, 6, "spread %g", spread)
		require.Zero(t, r.Dead)
		require.Equal(t, r.Attempts-r.Done, r.Curve[len(r.Curve)-1].InFlight, "every attempt completed or is in flight")
		require.Equal(t, 600*time.Second, r.Horizon, "twice the model's drain time by default")
		require.Len(t, r.Curve, 201)
		require.Equal(t, 6000-10, r.Curve[0].Waiting, "ten workers took the first ten")
	}
}

func TestSimulationIsRepeatable(t *testing.T) {
	t.Parallel()
	s := capacity.Simulation{Model: capacity.Model{Backlog: 500, Arrival: 8, Rate: 10}, FailureRate: 0.05, Seed: 42}
	a, err := s.Run()
	require.NoError(t, err)
	b, err := s.Run()
	require.NoError(t, err)
	require.Equal(t, a, b)
}

// Retries eat capacity: with 10% of attempts failing, 100 attempts/s finish
// about 90 messages/s, the debt shrinks at about 10/s, not 20/s, and the
// drain takes about twice the model's time.
func TestRetriesSlowTheDrain(t *testing.T) {
	t.Parallel()
	m := capacity.Model{Backlog: 6000, Arrival: 80, Rate: 100}
	r, err := capacity.Simulation{Model: m, FailureRate: 0.1, RetryDelay: 30 * time.Second, Horizon: 20 * time.Minute, Seed: 3}.Run()
	require.NoError(t, err)
	require.True(t, r.Drained)
	require.InDelta(t, 600, r.DrainTime.Seconds(), 90)
	require.Greater(t, r.Attempts, r.Done+r.Dead, "failed attempts were retried")

	r, err = capacity.Simulation{Model: m, FailureRate: 0.3, MaxAttempts: 2, RetryDelay: 5 * time.Second, Horizon: 15 * time.Minute, Seed: 3}.Run()
	require.NoError(t, err)
	require.Positive(t, r.Dead, "messages failing twice go to the DLQ")
	require.InDelta(t, 0.09, float64(r.Dead)/float64(r.Done+r.Dead), 0.02, "0.3 × 0.3 of messages fail both attempts")
}

func TestSimulationThatNeverDrains(t *testing.T) {
	t.Parallel()
	r, err := capacity.Simulation{Model: capacity.Model{Backlog: 100, Arrival: 12, Rate: 10}, Horizon: 10 * time.Minute, Seed: 1}.Run()
	require.NoError(t, err)
	require.False(t, r.Drained)
	last := r.Curve[len(r.Curve)-1]
	require.InDelta(t, 100+2*600, last.Waiting, 200, "the debt grows at 2/s")
}

func TestSimulationRejectsBadInput(t *testing.T) {
	t.Parallel()
	_, err := capacity.Simulation{Model: capacity.Model{Backlog: 1, Rate: 1}, FailureRate: 1, Workers: -1}.Run()
	require.ErrorContains(t, err, "failure rate 1 must be at least 0 and below 1")
	require.ErrorContains(t, err, "workers -1 must be at least 1")
	_, err = capacity.Simulation{Model: capacity.Model{Backlog: 1, Arrival: 1e6, Rate: 2e6}, Horizon: time.Hour}.Run()
	require.ErrorContains(t, err, "shorten the horizon")
}

func TestPlotWritesAPNG(t *testing.T) {
	t.Parallel()
	m := capacity.Model{Backlog: 6000, Arrival: 80, Rate: 100}
	r, err := capacity.Simulation{Model: m, FailureRate: 0.05, Seed: 1}.Run()
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "drain.png")
	require.NoError(t, capacity.Plot(file, m, r))

	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Greater(t, img.Bounds().Dx(), 500)
	require.Greater(t, img.Bounds().Dy(), 250)

	require.ErrorContains(t, capacity.Plot(filepath.Join(t.TempDir(), "drain.svg"), m, r), "only .png")
}

func TestWorstWait(t *testing.T) {
	t.Parallel()
	w, ok := capacity.Model{Backlog: 6000, Arrival: 80, Rate: 100}.WorstWait()
	require.True(t, ok)
	require.Equal(t, 60*time.Second, w, "served in order, the last of the backlog waits backlog/rate, though the queue empties only at 300 s")
	_, ok = capacity.Model{Backlog: 10, Arrival: 100, Rate: 100}.WorstWait()
	require.False(t, ok, "a backlog that never drains makes waits grow without bound")
}
