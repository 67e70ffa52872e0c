package sqsconsumer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/sqsconsumer/sqsconsumertest"
)

// TestParkedMessagesWaitUntilReleased, on real queues: messages whose
// handler parks them leave the queue for the parking queue (acknowledged,
// not reported failed, nothing delayed in the queue), and Release moves
// every one back, with its retry deadline, its deliveries so far and its
// original attributes; the parking queue is then empty.
func TestParkedMessagesWaitUntilReleased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	parking, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("q-%d-parking", queueSeq.Add(1)))})
	require.NoError(t, err)
	f := setup(t, sqsconsumer.Config{RetryBudget: time.Hour, ParkingURL: aws.ToString(parking.QueueUrl), Concurrency: 10}, 60*time.Second, 2)
	const n = 25
	for i := range n {
		send(t, f.url, envelope(events.NewID(), 1), map[string]string{"type": "enrollment.created", "event_id": fmt.Sprintf("e-%d", i)})
	}

	deadlines := map[string]time.Time{}
	for parked := 0; parked < n; {
		msgs := receive(t, f.url, 1, patience.Wait())
		require.NotEmpty(t, msgs)
		ev := lambdaEvent(msgs)
		resp := f.consumer.Process(ctx, ev, func(_ context.Context, m sqsconsumer.Message) error {
			deadlines[m.Attribute(sqsconsumer.AttrEventID)] = m.Deadline
			return sqsconsumer.Park(errors.New("provider down"))
		})
		require.Empty(t, sqsconsumertest.FailedIDs(resp), "a parked message is acknowledged")
		settle(t, f.url, ev, resp)
		parked += len(msgs)
	}
	require.Empty(t, receive(t, f.url, 1, 0), "nothing waits in the queue itself")
	require.Empty(t, receive(t, f.dlqURL, 1, 0))

	moved, err := f.consumer.Release(ctx)
	require.NoError(t, err)
	require.Equal(t, n, moved)
	back := receive(t, f.url, n, patience.Wait())
	require.Len(t, back, n, "every parked message is back")
	seen := map[string]bool{}
	for _, m := range back {
		attrs := stringAttrs(m)
		id := attrs["event_id"]
		require.False(t, seen[id], "once each")
		seen[id] = true
		require.Equal(t, "enrollment.created", attrs["type"])
		require.Equal(t, "1", attrs["retry_attempt"], "its deliveries so far")
		require.Equal(t, deadlines[id].UTC().Format(time.RFC3339Nano), attrs["retry_deadline"], "its own deadline, not a fresh budget")
	}
	ev := lambdaEvent(back)
	var attempts []int
	resp := f.consumer.Process(ctx, ev, func(_ context.Context, m sqsconsumer.Message) error {
		attempts = append(attempts, m.Attempt)
		return nil
	})
	settle(t, f.url, ev, resp)
	for _, a := range attempts {
		require.Equal(t, 2, a, "the delivery after the release is the second")
	}
	moved, err = f.consumer.Release(ctx)
	require.NoError(t, err)
	require.Zero(t, moved, "the parking queue is empty")
}

// TestParkWithoutParkingQueueRetries: without a parking queue, or when the
// copy cannot be parked, a parked failure is retried like any transient one.
func TestParkWithoutParkingQueueRetries(t *testing.T) {
	t.Parallel()
	require.Equal(t, sqsconsumer.Verdict{Action: sqsconsumer.Retry, Park: true}, sqsconsumer.Classify(sqsconsumer.Park(errors.New("down"))))

	c, fake := newUnit(t, sqsconsumer.Config{Jitter: noJitter})
	resp := c.Process(context.Background(), sqsconsumertest.Event(record("m", 1, "")), func(context.Context, sqsconsumer.Message) error {
		return sqsconsumer.Park(errors.New("down"))
	})
	require.Equal(t, []string{"m"}, sqsconsumertest.FailedIDs(resp))
	d, ok := fake.Visibility("m")
	require.True(t, ok)
	require.Equal(t, time.Second, d, "the backoff")

	parking := "http://sqs.local/000000000000/q-parking"
	c, fake = newUnit(t, sqsconsumer.Config{Jitter: noJitter, RetryBudget: time.Hour, ParkingURL: parking})
	resp = c.Process(context.Background(), sqsconsumertest.Event(record("m", 1, "")), func(context.Context, sqsconsumer.Message) error {
		return sqsconsumer.Park(errors.New("down"))
	})
	require.Empty(t, sqsconsumertest.FailedIDs(resp))
	require.Len(t, fake.Copies(), 1)
	require.Equal(t, parking, fake.Copies()[0].QueueURL)
	require.Zero(t, fake.Copies()[0].Delay)

	fake.FailSends(errors.New("throttled"))
	resp = c.Process(context.Background(), sqsconsumertest.Event(record("m2", 1, "")), func(context.Context, sqsconsumer.Message) error {
		return sqsconsumer.Park(errors.New("down"))
	})
	require.Equal(t, []string{"m2"}, sqsconsumertest.FailedIDs(resp), "not lost: retried in place")

	_, err := sqsconsumer.New(sqsconsumer.Config{Name: "n", QueueURL: "q", DLQURL: "d", ParkingURL: "p"}, fake, nil)
	require.ErrorContains(t, err, "ParkingURL needs RetryBudget")
}
