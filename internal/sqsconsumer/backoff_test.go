package sqsconsumer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/sqsconsumer/sqsconsumertest"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	widest := func(n time.Duration) time.Duration { return n - 1 }
	low, _ := newUnit(t, sqsconsumer.Config{Jitter: noJitter})
	high, _ := newUnit(t, sqsconsumer.Config{Jitter: widest})
	for _, tt := range []struct {
		receiveCount int
		ceiling      time.Duration
	}{
		{1, 2 * time.Second}, {2, 4 * time.Second}, {3, 8 * time.Second}, {4, 16 * time.Second},
		{5, 30 * time.Second}, {6, 30 * time.Second}, {1000, 30 * time.Second},
	} {
		require.Equal(t, time.Second, low.Backoff(tt.receiveCount), "floor at receive %d", tt.receiveCount)
		require.Equal(t, tt.ceiling, high.Backoff(tt.receiveCount), "ceiling at receive %d", tt.receiveCount)
	}

	// With real jitter every delay is a whole number of seconds in range,
	// and each one of them comes up.
	random, _ := newUnit(t, sqsconsumer.Config{})
	seen := map[time.Duration]int{}
	for range 2000 {
		d := random.Backoff(3)
		require.True(t, d >= time.Second && d <= 8*time.Second && d%time.Second == 0, "delay %s", d)
		seen[d]++
	}
	require.Len(t, seen, 8, "1 s to 8 s, each drawn: %v", seen)
}

// TestFirstRetryIsSpread: messages that fail together (a provider outage
// begins) do not all come back exactly one base later: the first retry is
// one or two seconds, each about half the time, and so is the second
// chance a provider's Retry-After gets.
func TestFirstRetryIsSpread(t *testing.T) {
	t.Parallel()
	c, _ := newUnit(t, sqsconsumer.Config{})
	seen := map[time.Duration]int{}
	for range 1000 {
		seen[c.Backoff(1)]++
	}
	require.Len(t, seen, 2, "%v", seen)
	require.InDelta(t, 500, seen[time.Second], 100, "uniform, not rounded up to 2 s: %v", seen)
	require.InDelta(t, 500, seen[2*time.Second], 100, "%v", seen)

	// The same base equal to the cap leaves nothing to spread over.
	flat, _ := newUnit(t, sqsconsumer.Config{BackoffBase: 5 * time.Second, BackoffCap: 5 * time.Second})
	require.Equal(t, 5*time.Second, flat.Backoff(1))
}

// TestRetryDelays checks the visibility the consumer sets for each kind of
// transient result.
func TestRetryDelays(t *testing.T) {
	t.Parallel()
	widest := func(n time.Duration) time.Duration { return n - 1 }
	tests := []struct {
		name         string
		err          error
		receiveCount int
		jitter       func(time.Duration) time.Duration
		want         time.Duration
	}{
		{"backoff floor", errors.New("boom"), 4, noJitter, time.Second},
		{"backoff ceiling, first delivery", errors.New("boom"), 1, widest, 2 * time.Second},
		{"backoff ceiling, fourth delivery", errors.New("boom"), 4, widest, 16 * time.Second},
		{"Retry-After honoured", sqsconsumer.RetryAfter(5*time.Second, errors.New("429")), 1, noJitter, 5 * time.Second},
		{"Retry-After plus at most one base of jitter", sqsconsumer.RetryAfter(5*time.Second, errors.New("429")), 1, widest, 6 * time.Second},
		{"Retry-After rounded up", sqsconsumer.RetryAfter(1500*time.Millisecond, errors.New("429")), 1, noJitter, 2 * time.Second},
		{"Retry-After capped", sqsconsumer.RetryAfter(10*time.Minute, errors.New("429")), 1, widest, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, fake := newUnit(t, sqsconsumer.Config{Jitter: tt.jitter})
			resp := c.Process(context.Background(), lambdaevents.SQSEvent{Records: []lambdaevents.SQSMessage{record("m", tt.receiveCount, "")}},
				func(context.Context, sqsconsumer.Message) error { return tt.err })
			require.Equal(t, []string{"m"}, sqsconsumertest.FailedIDs(resp))
			d, ok := fake.Visibility("m")
			require.True(t, ok)
			require.Equal(t, tt.want, d)
			require.Empty(t, fake.DeadLetters())
		})
	}
}

// TestTransientFailureComesBackAfterBackoff checks that a retried message's
// visibility is really changed: the queue's own timeout is a minute, the
// backoff of a first delivery one second.
func TestTransientFailureComesBackAfterBackoff(t *testing.T) {
	t.Parallel()
	f := setup(t, sqsconsumer.Config{Jitter: noJitter}, 60*time.Second, 5)
	send(t, f.url, envelope(events.NewID(), 1), nil)
	ev := lambdaEvent(receive(t, f.url, 1, 5*time.Second))
	require.Len(t, ev.Records, 1)

	started := time.Now()
	resp := f.consumer.Process(context.Background(), ev, func(context.Context, sqsconsumer.Message) error {
		return errors.New("provider unavailable")
	})
	settle(t, f.url, ev, resp)
	require.Equal(t, []string{ev.Records[0].MessageId}, sqsconsumertest.FailedIDs(resp))

	again := receive(t, f.url, 1, 10*time.Second)
	require.Len(t, again, 1, "the message came back long before the queue's 60 s visibility timeout")
	require.GreaterOrEqual(t, time.Since(started), 900*time.Millisecond, "not before the backoff")
	require.Equal(t, "2", again[0].Attributes["ApproximateReceiveCount"])
	require.Empty(t, receive(t, f.dlqURL, 1, 0))
}
