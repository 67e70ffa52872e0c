package esm

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A persistent local cloud keeps each mapping's checkpoint (OnCheckpoint)
// and starts the next run's poller after it (ResumeAfter): what was
// delivered is not delivered again, what was not is, whatever the starting
// position says.
func TestStreamResumesAfterTheKeptCheckpoint(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var kept []uint64
	keep := func(seq uint64) { mu.Lock(); kept = append(kept, seq); mu.Unlock() }
	last := func() uint64 {
		mu.Lock()
		defer mu.Unlock()
		if len(kept) == 0 {
			return 0
		}
		return kept[len(kept)-1]
	}

	first := newStreamSetup(t, StreamMapping{BatchSize: 4, OnCheckpoint: keep}, nil)
	first.log.Append(testStreamARN, items(1, 10, "order.placed")...)
	run(t, first.poller)
	waitFor(t, 10*time.Second, "the first run finishes the ten records", func() bool { return last() == 10 })
	mu.Lock()
	require.IsIncreasing(t, kept[1:], "checkpoints only move forward")
	mu.Unlock()

	for _, pos := range []string{StartingPositionTrimHorizon, StartingPositionLatest} {
		t.Run(pos, func(t *testing.T) {
			resume := uint64(10)
			next := newStreamSetup(t, StreamMapping{BatchSize: 4, StartingPosition: pos, ResumeAfter: &resume}, nil)
			// The same stream, restored, with two records more.
			next.log.Append(testStreamARN, items(1, 12, "order.placed")...)
			require.Equal(t, resume, next.poller.Checkpoint(), "the kept checkpoint is reported before the poller runs")
			run(t, next.poller)
			waitFor(t, 10*time.Second, "the records after the checkpoint are delivered", func() bool { return next.poller.Checkpoint() == 12 })
			require.Equal(t, [][]uint64{{11, 12}}, next.invocations(t), "nothing before the checkpoint again")
		})
	}
}
