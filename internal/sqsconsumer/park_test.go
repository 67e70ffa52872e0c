package sqsconsumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

	var mu sync.Mutex // the batch's messages are handled concurrently
	deadlines := map[string]time.Time{}
	for parked := 0; parked < n; {
		msgs := receive(t, f.url, 1, patience.Wait())
		require.NotEmpty(t, msgs)
		ev := lambdaEvent(msgs)
		resp := f.consumer.Process(ctx, ev, func(_ context.Context, m sqsconsumer.Message) error {
			mu.Lock()
			defer mu.Unlock()
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
		mu.Lock()
		defer mu.Unlock()
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

// TestReleaseFindsParkedMessagesInFlight, on real queues: a receive of the
// parking queue whose answer was lost (the messages are received, and
// nobody holds them) leaves them invisible for a while. Release does not
// take the empty answers it gets meanwhile for an empty parking queue: it
// sees them in flight and waits for them, and moves every one back.
func TestReleaseFindsParkedMessagesInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	parking, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("q-%d-parking", queueSeq.Add(1)))})
	require.NoError(t, err)
	parkingURL := aws.ToString(parking.QueueUrl)
	f := setup(t, sqsconsumer.Config{RetryBudget: time.Hour, ParkingURL: parkingURL}, 60*time.Second, 2)
	const n = 3
	for i := range n {
		send(t, parkingURL, envelope(events.NewID(), 1), map[string]string{"type": "enrollment.created", "event_id": fmt.Sprintf("e-%d", i)})
	}
	lost, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(parkingURL), MaxNumberOfMessages: n, VisibilityTimeout: 2})
	require.NoError(t, err)
	require.NotEmpty(t, lost.Messages, "the receive whose answer is lost")

	moved, err := f.consumer.Release(ctx)
	require.NoError(t, err)
	require.Equal(t, n, moved, "the messages in flight too")
	require.Len(t, receive(t, f.url, n, patience.Wait()), n, "every parked message is back")
	require.Empty(t, receive(t, parkingURL, 1, 0))
}

// TestTagTravelsWithTheMessage: a tag (Tag) is an attribute of the retry's
// copy, and of a parked copy; later copies keep it, whatever their own
// failure; it does not change the classification.
func TestTagTravelsWithTheMessage(t *testing.T) {
	t.Parallel()
	tagged := sqsconsumer.Tag(sqsconsumer.RetryAfter(2*time.Second, errors.New("down")), "prober", "true")
	require.Equal(t, sqsconsumer.Classify(sqsconsumer.RetryAfter(2*time.Second, errors.New("down"))), sqsconsumer.Classify(tagged))
	require.Equal(t, sqsconsumer.Verdict{Action: sqsconsumer.DeadLetter, Code: "bad"}, sqsconsumer.Classify(sqsconsumer.Tag(sqsconsumer.Permanent("bad", nil), "prober", "true")))
	require.NoError(t, sqsconsumer.Tag(nil, "prober", "true"))

	parking := "http://sqs.local/000000000000/q-parking"
	c, fake := newUnit(t, sqsconsumer.Config{Jitter: noJitter, RetryBudget: time.Hour, ParkingURL: parking})
	resp := c.Process(context.Background(), sqsconsumertest.Event(record("m", 1, "")), func(context.Context, sqsconsumer.Message) error {
		return tagged
	})
	require.Empty(t, sqsconsumertest.FailedIDs(resp))
	require.Len(t, fake.Copies(), 1)
	first := fake.Copies()[0]
	require.Equal(t, "true", first.Attributes["prober"])
	require.Equal(t, 2*time.Second, first.Delay)

	again := sqsconsumertest.Record("m2", first.Body, 1, time.Now(), first.Attributes)
	var seen string
	resp = c.Process(context.Background(), sqsconsumertest.Event(again), func(_ context.Context, m sqsconsumer.Message) error {
		seen = m.Attribute("prober")
		return errors.New("down again")
	})
	require.Empty(t, sqsconsumertest.FailedIDs(resp))
	require.Equal(t, "true", seen, "the handler sees the tag")
	require.Len(t, fake.Copies(), 2)
	require.Equal(t, "true", fake.Copies()[1].Attributes["prober"], "kept on the next copy")
	require.Equal(t, "2", fake.Copies()[1].Attributes["retry_attempt"])

	resp = c.Process(context.Background(), sqsconsumertest.Event(record("m3", 1, "")), func(context.Context, sqsconsumer.Message) error {
		return sqsconsumer.Tag(sqsconsumer.Park(errors.New("down")), "prober", "parked")
	})
	require.Empty(t, sqsconsumertest.FailedIDs(resp))
	require.Equal(t, parking, fake.Copies()[2].QueueURL)
	require.Equal(t, "parked", fake.Copies()[2].Attributes["prober"])
}
