package sqsconsumer_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/sqsconsumer/sqsconsumertest"
)

func TestDeadLetterSendFailureRetriesInsteadOfLosing(t *testing.T) {
	t.Parallel()
	c, fake := newUnit(t, sqsconsumer.Config{Jitter: noJitter})
	fake.FailSends(errors.New("sqs unavailable"))
	resp := c.Process(context.Background(), lambdaevents.SQSEvent{Records: []lambdaevents.SQSMessage{record("m", 1, "")}},
		func(context.Context, sqsconsumer.Message) error {
			return sqsconsumer.Permanent("bad", errors.New("bad message"))
		})
	require.Equal(t, []string{"m"}, sqsconsumertest.FailedIDs(resp), "not acknowledged: it is in no queue but the source")
	d, ok := fake.Visibility("m")
	require.True(t, ok)
	require.Equal(t, time.Second, d)
}

// TestFIFODeadLetter: a FIFO queue's dead letters keep their message group and
// are deduplicated by the original message id, so a retried send of the
// same dead letter is stored once.
func TestFIFODeadLetter(t *testing.T) {
	t.Parallel()
	fake := &sqsconsumertest.SQS{}
	c, err := sqsconsumer.New(sqsconsumer.Config{
		Name: "fifo", QueueURL: "http://sqs.local/000000000000/q.fifo", DLQURL: "http://sqs.local/000000000000/q-dlq.fifo", Metrics: io.Discard,
	}, fake, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	resp := c.Process(context.Background(), lambdaevents.SQSEvent{Records: []lambdaevents.SQSMessage{record("m", 1, "student-7")}},
		func(context.Context, sqsconsumer.Message) error {
			return sqsconsumer.Permanent("bad", errors.New("bad"))
		})
	require.Empty(t, sqsconsumertest.FailedIDs(resp))
	dead := fake.DeadLetters()
	require.Len(t, dead, 1)
	require.Equal(t, "student-7", dead[0].GroupID)
	require.Equal(t, "m", dead[0].DeduplicationID)
}

// TestLastDeliveryIsDeadLetteredWithReason: with MaxReceiveCount set, a
// transient failure of the last delivery reaches the DLQ with a reason
// instead of being moved there silently by the redrive policy.
func TestLastDeliveryIsDeadLetteredWithReason(t *testing.T) {
	t.Parallel()
	f := setup(t, sqsconsumer.Config{MaxReceiveCount: 2, Jitter: noJitter}, 60*time.Second, 2)
	send(t, f.url, envelope(events.NewID(), 1), nil)

	var lastAttempt []bool
	handler := func(_ context.Context, m sqsconsumer.Message) error {
		lastAttempt = append(lastAttempt, m.LastAttempt)
		return errors.New("provider unavailable")
	}
	for range 2 {
		ev := lambdaEvent(receive(t, f.url, 1, 10*time.Second))
		require.Len(t, ev.Records, 1)
		settle(t, f.url, ev, f.consumer.Process(context.Background(), ev, handler))
	}
	require.Equal(t, []bool{false, true}, lastAttempt)

	dead := receive(t, f.dlqURL, 1, 5*time.Second)
	require.Len(t, dead, 1)
	attrs := stringAttrs(dead[0])
	require.Equal(t, "retries_exhausted", attrs["dlq_code"])
	require.Equal(t, "provider unavailable", attrs["dlq_reason"])
	require.Equal(t, "2", attrs["receive_count"])
	require.Empty(t, receive(t, f.url, 1, 0), "acknowledged after the dead letter")
}
