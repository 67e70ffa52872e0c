package relay_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/outbox"
	"github.com/clubdev/club/internal/relay"
)

// batchMarker marks through the wrapped store, counting its calls; fail
// makes MarkAllPublished fail after marking the first row.
type batchMarker struct {
	relay.Marker
	batches, singles atomic.Int32
	fail             bool
}

func (m *batchMarker) MarkPublished(ctx context.Context, eventID string, at time.Time) error {
	m.singles.Add(1)
	return m.Marker.MarkPublished(ctx, eventID, at)
}

func (m *batchMarker) MarkAllPublished(ctx context.Context, rows []outbox.Row, at time.Time) error {
	m.batches.Add(1)
	for i, row := range rows {
		if m.fail && i == 1 {
			return errors.New("transaction cancelled")
		}
		if err := m.Marker.MarkPublished(ctx, row.EventID, at); err != nil {
			return err
		}
	}
	return nil
}

var _ relay.BatchMarker = (*batchMarker)(nil)

// A batch is marked in one call when the outbox can; when that call fails,
// row by row, so every row ends up published either way.
func TestRelayMarksABatchAtOnce(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{false, true} {
		w := newWorld(t)
		rows := w.enroll(5, time.Second)
		pub := &fakePublisher{}
		m := &batchMarker{Marker: w.store.Outbox, fail: fail}
		r := newRelay(t, relay.Config{Routes: relay.Routes{events.KindEvent: pub}, Outbox: m, Now: w.clock})

		n, err := r.Publish(w.ctx, rows)
		require.NoError(t, err)
		require.Equal(t, 5, n)
		require.EqualValues(t, 1, m.batches.Load())
		if fail {
			require.EqualValues(t, 5, m.singles.Load(), "after a failed batch, each row on its own")
		} else {
			require.Zero(t, m.singles.Load())
		}
		require.Empty(t, w.pendingIDs())
		for _, row := range rows {
			require.Equal(t, outbox.StatusPublished, w.row(row.EventID).Status)
		}
	}
}
