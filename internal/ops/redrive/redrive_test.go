package redrive_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/ops/opstest"
	"github.com/clubdev/club/internal/ops/redrive"
	"github.com/clubdev/club/internal/patience"
)

func setup(t *testing.T) (*sqs.Client, opstest.Queues) {
	t.Helper()
	c := sqs.NewFromConfig(opstest.AWSConfig(opstest.Endpoint(t, nil)))
	return c, opstest.CreateQueuePair(t, c, 5)
}

func str(v string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

// deadLetter puts n dead letters in the DLQ as a consumer leaves them: the
// event's attributes plus the dead-letter ones. Bodies are "evt-<i>".
func deadLetter(t *testing.T, c *sqs.Client, dlq string, n int) {
	t.Helper()
	for start := 0; start < n; start += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for i := start; i < min(start+10, n); i++ {
			id := fmt.Sprintf("evt-%03d", i)
			entries = append(entries, types.SendMessageBatchRequestEntry{
				Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(id),
				MessageAttributes: map[string]types.MessageAttributeValue{
					"type": str("enrollment.created"), "event_id": str(id),
					"dlq_code": str("retries_exhausted"), "dlq_reason": str("mail provider said 503"),
					"source_queue": str("http://example/q"), "original_message_id": str("m-1"), "receive_count": str("8"),
				},
			})
		}
		out, err := c.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(dlq), Entries: entries})
		require.NoError(t, err)
		require.Empty(t, out.Failed)
	}
}

// drainAll receives and deletes everything in a queue and counts the
// messages by body: a body seen twice is a doubled message.
func drainAll(t *testing.T, c *sqs.Client, url string) (map[string]int, []types.Message) {
	t.Helper()
	counts := map[string]int{}
	var all []types.Message
	for {
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 60, MessageAttributeNames: []string{"All"},
		})
		require.NoError(t, err)
		if len(out.Messages) == 0 {
			return counts, all
		}
		for _, m := range out.Messages {
			counts[*m.Body]++
			all = append(all, m)
			_, err := c.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
	}
}

// peekBodies counts a queue's visible messages by body without taking them
// for long.
func peekBodies(t *testing.T, c *sqs.Client, url string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	var handles []*string
	for {
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 30})
		require.NoError(t, err)
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			counts[*m.Body]++
			handles = append(handles, m.ReceiptHandle)
		}
	}
	for _, h := range handles {
		_, err := c.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: h, VisibilityTimeout: 0})
		require.NoError(t, err)
	}
	return counts
}

// 500 dead letters at 50/s: about 10 s. Interrupted halfway and resumed, the
// source queue ends with each of the 500 exactly once and the DLQ empty.
func TestInterruptedRedriveMovesEveryMessageExactlyOnce(t *testing.T) {
	t.Parallel()
	c, q := setup(t)
	const total, perSecond = 500, 50
	deadLetter(t, c, q.DLQ, total)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := time.Now()
	res, err := redrive.Run(ctx, c, q.DLQ, q.Source, redrive.Options{
		Rate: perSecond,
		Progress: func(moved int) {
			if moved >= total/2 {
				cancel() // Ctrl-C
			}
		},
	})
	firstRun := time.Since(started)
	require.ErrorIs(t, err, redrive.ErrInterrupted)
	require.ErrorIs(t, err, context.Canceled)
	require.GreaterOrEqual(t, res.Moved, total/2)
	require.Less(t, res.Moved, total/2+10, "stopped after the batch in hand")
	// The rate holds: 250 messages at 50/s cannot move in under about 5 s
	// (a first batch may go at once). Only the lower bound is a fact of the
	// code; how much longer a loaded machine takes is not.
	require.GreaterOrEqual(t, firstRun.Seconds(), 4.0, "half of 500 at 50/s")

	// At the interruption every message is in exactly one queue, and none
	// is left hidden.
	inSource, inDLQ := peekBodies(t, c, q.Source), peekBodies(t, c, q.DLQ)
	require.Len(t, inSource, res.Moved)
	require.Len(t, inDLQ, total-res.Moved)
	for body, n := range inSource {
		require.Equal(t, 1, n, body)
		require.Zero(t, inDLQ[body], "%s is in both queues", body)
	}

	resumed := time.Now()
	res2, err := redrive.Run(context.Background(), c, q.DLQ, q.Source, redrive.Options{Rate: perSecond})
	require.NoError(t, err)
	require.True(t, res2.Drained)
	require.Equal(t, total, res.Moved+res2.Moved)
	require.GreaterOrEqual(t, firstRun.Seconds()+time.Since(resumed).Seconds(), 9.0, "500 at 50/s, both runs together")

	counts, msgs := drainAll(t, c, q.Source)
	require.Len(t, counts, total)
	for body, n := range counts {
		require.Equal(t, 1, n, "%s doubled", body)
	}
	left, _ := drainAll(t, c, q.DLQ)
	require.Empty(t, left)

	// Messages go back as they first arrived: the event's attributes, not
	// the dead-letter ones.
	for _, m := range msgs {
		require.Equal(t, "enrollment.created", *m.MessageAttributes["type"].StringValue)
		require.Equal(t, *m.Body, *m.MessageAttributes["event_id"].StringValue)
		for _, a := range redrive.DeadLetterAttributes {
			require.NotContains(t, m.MessageAttributes, a)
		}
	}
}

func TestRedriveStopsAtMax(t *testing.T) {
	t.Parallel()
	c, q := setup(t)
	deadLetter(t, c, q.DLQ, 25)
	var progress []int
	res, err := redrive.Run(context.Background(), c, q.DLQ, q.Source, redrive.Options{Max: 13, Batch: 5, Progress: func(n int) { progress = append(progress, n) }})
	require.NoError(t, err)
	require.Equal(t, redrive.Result{Moved: 13}, res)
	require.Equal(t, []int{5, 10, 13}, progress)
	require.Len(t, peekBodies(t, c, q.Source), 13)
	require.Len(t, peekBodies(t, c, q.DLQ), 12)
}

func TestRedriveStopsWhenTheCheckFails(t *testing.T) {
	t.Parallel()
	c, q := setup(t)
	deadLetter(t, c, q.DLQ, 30)
	late := errors.New("source queue's oldest message is 2m old, its class allows 1m")

	res, err := redrive.Run(context.Background(), c, q.DLQ, q.Source, redrive.Options{Check: func(context.Context) error { return late }})
	require.ErrorIs(t, err, late)
	require.Zero(t, res.Moved, "checked before the first batch")

	var checks atomic.Int32
	res, err = redrive.Run(context.Background(), c, q.DLQ, q.Source, redrive.Options{
		Batch: 10, CheckEvery: time.Nanosecond,
		Check: func(context.Context) error {
			if checks.Add(1) == 3 {
				return late
			}
			return nil
		},
	})
	require.ErrorIs(t, err, late)
	require.Equal(t, 20, res.Moved, "two batches passed the check, the third did not start")
}

// failingSQS fails the sends of bodies in failSend and the deletes when
// failDelete is set, like a throttled or broken SQS.
type failingSQS struct {
	*sqs.Client
	failSend   map[string]bool
	failDelete bool
}

func (f *failingSQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	var keep []types.SendMessageBatchRequestEntry
	var failed []types.BatchResultErrorEntry
	for _, e := range in.Entries {
		if f.failSend[*e.MessageBody] {
			failed = append(failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("try again"), SenderFault: false})
		} else {
			keep = append(keep, e)
		}
	}
	in.Entries = keep
	out, err := f.Client.SendMessageBatch(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	out.Failed = append(out.Failed, failed...)
	return out, nil
}

func (f *failingSQS) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	if f.failDelete {
		return nil, errors.New("connection reset")
	}
	return f.Client.DeleteMessageBatch(ctx, in, opts...)
}

func TestAFailedSendLeavesTheMessageInTheDLQ(t *testing.T) {
	t.Parallel()
	c, q := setup(t)
	deadLetter(t, c, q.DLQ, 3)
	res, err := redrive.Run(context.Background(), &failingSQS{Client: c, failSend: map[string]bool{"evt-001": true}}, q.DLQ, q.Source, redrive.Options{Hold: time.Hour})
	require.ErrorContains(t, err, "InternalError: try again")
	require.Equal(t, 2, res.Moved)
	require.Equal(t, map[string]int{"evt-000": 1, "evt-002": 1}, peekBodies(t, c, q.Source))
	require.Equal(t, map[string]int{"evt-001": 1}, peekBodies(t, c, q.DLQ), "visible again at once, not after the hour's hold")
}

// A failed delete after a successful send is the one way to a duplicate:
// the message is then in both queues, and the error says so.
func TestAFailedDeleteIsReportedAsAPossibleDuplicate(t *testing.T) {
	t.Parallel()
	c, q := setup(t)
	deadLetter(t, c, q.DLQ, 2)
	res, err := redrive.Run(context.Background(), &failingSQS{Client: c, failDelete: true}, q.DLQ, q.Source, redrive.Options{Hold: time.Second})
	require.ErrorContains(t, err, "they are in the source queue too")
	require.Zero(t, res.Moved)
	require.Len(t, peekBodies(t, c, q.Source), 2)
	require.Eventually(t, func() bool { return len(peekBodies(t, c, q.DLQ)) == 2 }, patience.Wait(), 100*time.Millisecond,
		"the undeleted copies reappear in the DLQ when their hold ends")
}

func TestRedriveOptionsAreChecked(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		o       redrive.Options
		dlq     string
		wantErr string
	}{
		{redrive.Options{Batch: 11}, "q", "batch 11 must be between 1 and 10"},
		{redrive.Options{Rate: -1}, "q", "rate -1 must not be negative"},
		{redrive.Options{Max: -1}, "q", "max -1 must not be negative"},
		{redrive.Options{}, "orders-dlq.fifo", "FIFO queues"},
	} {
		_, err := redrive.Run(context.Background(), nil, tt.dlq, "q", tt.o)
		require.ErrorContains(t, err, tt.wantErr)
		require.True(t, strings.HasPrefix(err.Error(), "redrive: "))
	}
}

// poisonConsumer plays a consumer that fails every message it receives and
// dead-letters it as package sqsconsumer does, naming the failed message in
// original_message_id. It returns how many messages it received.
func poisonConsumer(ctx context.Context, c *sqs.Client, q opstest.Queues) func() int {
	var received atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.Source), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
			if err != nil {
				continue
			}
			for _, m := range out.Messages {
				received.Add(1)
				attrs := map[string]types.MessageAttributeValue{
					"dlq_code": str("malformed_event"), "dlq_reason": str("unexpected end of JSON input"),
					"original_message_id": str(*m.MessageId),
				}
				if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q.DLQ), MessageBody: m.Body, MessageAttributes: attrs}); err != nil {
					panic(err)
				}
				if _, err := c.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.Source), ReceiptHandle: m.ReceiptHandle}); err != nil {
					panic(err)
				}
			}
		}
	}()
	return func() int { <-done; return int(received.Load()) }
}

// Messages that fail again come back to the DLQ while the redrive runs. It
// moves each at most once and then stops, instead of cycling them.
func TestARedriveMovesPoisonOnceAndStops(t *testing.T) {
	t.Parallel()
	c, q := setup(t)
	deadLetter(t, c, q.DLQ, 30)
	ctx, stopConsumer := context.WithCancel(context.Background())
	received := poisonConsumer(ctx, c, q)

	res, err := redrive.Run(context.Background(), c, q.DLQ, q.Source, redrive.Options{Rate: 100})
	require.NoError(t, err)
	require.True(t, res.Drained)
	require.Equal(t, 30, res.Moved, "each once")
	require.Positive(t, res.CameBack)
	require.LessOrEqual(t, res.CameBack, 30)

	// Generous: on moto (testkit) every peek is dozens of serialised calls.
	require.Eventually(t, func() bool { return len(peekBodies(t, c, q.DLQ)) == 30 }, time.Minute, 50*time.Millisecond,
		"every poison message is back in the DLQ, visible, for a person to look at")
	stopConsumer()
	require.Equal(t, 30, received(), "the consumer saw each message once: nothing was moved twice")
}
