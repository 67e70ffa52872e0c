package sqsconsumer_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/sqsconsumer/sqsconsumertest"
)

// TestRetryBudgetOutlivesMaxReceiveCount: with a retry budget in time, a
// message that keeps failing transiently is retried as delayed copies, each
// received once, far beyond the queue's maxReceiveCount and without the
// redrive policy ever moving it; once its next retry could come after the
// deadline it is dead-lettered with retry_deadline_passed and every
// delivery counted, and the dead letter carries no budget of its own.
func TestRetryBudgetOutlivesMaxReceiveCount(t *testing.T) {
	t.Parallel()
	const budget = 5 * time.Second
	f := setup(t, sqsconsumer.Config{RetryBudget: budget, BackoffCap: time.Second, Jitter: noJitter}, 60*time.Second, 2)
	send(t, f.url, envelope(events.NewID(), 1), map[string]string{"type": "enrollment.created", "event_id": "e-1"})

	var attempts []int
	var deadlines []time.Time
	handler := func(_ context.Context, m sqsconsumer.Message) error {
		attempts = append(attempts, m.Attempt)
		deadlines = append(deadlines, m.Deadline)
		return errors.New("provider unavailable")
	}
	for {
		msgs := receive(t, f.url, 1, 30*time.Second)
		require.Len(t, msgs, 1, "the retry's copy arrives")
		require.Equal(t, "1", msgs[0].Attributes["ApproximateReceiveCount"], "each copy is received once")
		require.Equal(t, "e-1", stringAttrs(msgs[0])["event_id"], "the copy keeps the original attributes")
		ev := lambdaEvent(msgs)
		resp := f.consumer.Process(context.Background(), ev, handler)
		require.Empty(t, sqsconsumertest.FailedIDs(resp), "a retry is a new copy; the received one is acknowledged")
		settle(t, f.url, ev, resp)
		if dead := receive(t, f.dlqURL, 1, 0); len(dead) > 0 {
			attrs := stringAttrs(dead[0])
			require.Equal(t, "retry_deadline_passed", attrs["dlq_code"])
			require.Equal(t, "provider unavailable", attrs["dlq_reason"])
			require.Equal(t, strconv.Itoa(len(attempts)), attrs["receive_count"], "every copy's delivery counted")
			require.Equal(t, "e-1", attrs["event_id"])
			require.NotContains(t, attrs, "retry_deadline", "a redrive starts a fresh budget")
			require.NotContains(t, attrs, "retry_attempt")
			break
		}
	}
	require.Greater(t, len(attempts), 2, "more attempts than the queue's maxReceiveCount")
	for i, a := range attempts {
		require.Equal(t, i+1, a, "attempts count across copies")
		require.Equal(t, deadlines[0], deadlines[i], "one deadline for every copy")
	}
	require.Empty(t, receiveFor(t, f.url, 1, 2*time.Second), "nothing left in the source queue")
}

// TestRetryBudgetFallsBackToTheReceivedMessage: when the retry's copy
// cannot be sent, the received message is retried instead (reported failed,
// back after the backoff), so it is not lost.
func TestRetryBudgetFallsBackToTheReceivedMessage(t *testing.T) {
	t.Parallel()
	c, fake := newUnit(t, sqsconsumer.Config{RetryBudget: time.Hour, Jitter: noJitter})
	fake.FailSends(errors.New("sqs unavailable"))
	resp := c.Process(context.Background(), sqsconsumertest.Event(record("m", 1, "")),
		func(context.Context, sqsconsumer.Message) error { return errors.New("throttled") })
	require.Equal(t, []string{"m"}, sqsconsumertest.FailedIDs(resp), "not acknowledged: no copy carries it")
	d, ok := fake.Visibility("m")
	require.True(t, ok)
	require.Equal(t, time.Second, d)
	require.Empty(t, fake.Copies())
}
