package sqsconsumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/sqsconsumer/sqsconsumertest"
)

// TestFIFOGroupsKeepOrder: within a message group, messages run in batch
// order and a failure holds back the rest of the group; other groups go on.
func TestFIFOGroupsKeepOrder(t *testing.T) {
	t.Parallel()
	c, fake := newUnit(t, sqsconsumer.Config{Concurrency: 4, Jitter: noJitter})
	ev := lambdaevents.SQSEvent{Records: []lambdaevents.SQSMessage{
		record("g1-a", 1, "g1"), record("g2-a", 1, "g2"), record("g1-b", 1, "g1"),
		record("g1-c", 1, "g1"), record("g2-b", 1, "g2"),
	}}
	var mu sync.Mutex
	var order []string
	resp := c.Process(context.Background(), ev, func(_ context.Context, m sqsconsumer.Message) error {
		mu.Lock()
		order = append(order, m.ID)
		mu.Unlock()
		if m.ID == "g1-b" {
			return errors.New("transient")
		}
		return nil
	})
	require.NotContains(t, order, "g1-c", "held back behind the failure in its group")
	require.Less(t, indexOf(order, "g1-a"), indexOf(order, "g1-b"))
	require.Less(t, indexOf(order, "g2-a"), indexOf(order, "g2-b"))
	failedDelay, ok := fake.Visibility("g1-b")
	require.True(t, ok)
	heldDelay, ok := fake.Visibility("g1-c")
	require.True(t, ok)
	require.Equal(t, failedDelay, heldDelay, "the held-back message returns with the failed one")
	// The response lists failures in batch order, as the event source
	// mapping expects for FIFO queues.
	require.Equal(t, []string{"g1-b", "g1-c"}, sqsconsumertest.FailedIDs(resp))
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestConcurrencyIsBounded: no more than Concurrency handlers run at once,
// and that many do.
func TestConcurrencyIsBounded(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{1, 3} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			t.Parallel()
			c, _ := newUnit(t, sqsconsumer.Config{Concurrency: limit})
			var ev lambdaevents.SQSEvent
			for i := range 10 {
				ev.Records = append(ev.Records, record(fmt.Sprint(i), 1, ""))
			}
			var inFlight, peak atomic.Int32
			full := make(chan struct{})
			var once sync.Once
			var order []string
			var mu sync.Mutex
			resp := c.Process(context.Background(), ev, func(_ context.Context, m sqsconsumer.Message) error {
				n := inFlight.Add(1)
				defer inFlight.Add(-1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				if n == int32(limit) {
					once.Do(func() { close(full) })
				}
				select { // the first handlers wait until the limit is reached
				case <-full:
				case <-time.After(patience.Wait()):
					return errors.New("limit never reached")
				}
				mu.Lock()
				order = append(order, m.ID)
				mu.Unlock()
				return nil
			})
			require.Empty(t, sqsconsumertest.FailedIDs(resp))
			require.Equal(t, int32(limit), peak.Load())
			if limit == 1 {
				require.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, order, "sequential means batch order")
			}
		})
	}
}
