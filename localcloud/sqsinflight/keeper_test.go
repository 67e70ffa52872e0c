package sqsinflight

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
)

func client(url string) *sqs.Client {
	return sqs.NewFromConfig(aws.Config{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		BaseEndpoint: aws.String(url),
	})
}

// A message received and not deleted when the local cloud stops is sent
// back to its queue at the next start, visible when its visibility timeout
// would have ended; a deleted one is not; after a redelivery the journal
// holds nothing in flight.
func TestMessagesInFlightComeBackAfterTheirVisibilityTimeout(t *testing.T) {
	srv := kumo.NewServer()
	t.Cleanup(srv.Close)
	target, err := url.Parse(srv.URL)
	require.NoError(t, err)
	emulator := httputil.NewSingleHostReverseProxy(target)
	journal := filepath.Join(t.TempDir(), "sqs-inflight.jsonl")
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()

	keeper, before, err := Open(journal, emulator, log)
	require.NoError(t, err)
	require.Empty(t, before)
	front := httptest.NewServer(keeper)
	t.Cleanup(front.Close)
	c := client(front.URL)

	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName: aws.String("inflight-" + time.Now().Format("150405.000000")[7:]), Attributes: map[string]string{"VisibilityTimeout": "4"},
	})
	require.NoError(t, err)
	for _, body := range []string{"kept", "deleted", "expired"} {
		_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(body),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String(body)}}})
		require.NoError(t, err)
	}
	got := map[string]sqstypes.Message{}
	for len(got) < 3 {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10,
			WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
		require.NoError(t, err)
		for _, m := range out.Messages {
			got[aws.ToString(m.Body)] = m
		}
	}
	_, err = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: got["deleted"].ReceiptHandle})
	require.NoError(t, err)
	_, err = c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: q.QueueUrl,
		ReceiptHandle: got["expired"].ReceiptHandle, VisibilityTimeout: 0})
	require.NoError(t, err)
	inflight := keeper.InFlight()
	require.Len(t, inflight, 2)
	require.NoError(t, keeper.Close())

	// The emulator's snapshot does not hold messages in flight: the queue
	// the next run finds holds none of them.
	_, err = client(srv.URL).PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: q.QueueUrl})
	require.NoError(t, err)

	next, restored, err := Open(journal, emulator, log)
	require.NoError(t, err)
	require.Len(t, restored, 2)
	require.Equal(t, "expired", restored[0].Body, "the one whose timeout ended first comes first")
	require.Equal(t, "kept", restored[1].Body)
	require.True(t, restored[1].VisibleAt.After(time.Now()), "kept is still invisible: %s", restored[1].VisibleAt)
	n, err := next.Redeliver(ctx, restored)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Empty(t, next.InFlight())

	c = client(srv.URL)
	first, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
	require.NoError(t, err)
	require.Len(t, first.Messages, 1, "only the message whose timeout had ended is visible at once")
	require.Equal(t, "expired", aws.ToString(first.Messages[0].Body))
	require.Equal(t, "expired", aws.ToString(first.Messages[0].MessageAttributes["kind"].StringValue))

	var kept *sqstypes.Message
	deadline := patience.Deadline()
	for kept == nil {
		require.True(t, time.Now().Before(deadline), "the kept message never came back")
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10,
			WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
		require.NoError(t, err)
		for _, m := range out.Messages {
			require.NotEqual(t, "deleted", aws.ToString(m.Body), "a deleted message came back")
			if aws.ToString(m.Body) == "kept" {
				kept = &m
			}
		}
	}
	require.False(t, time.Now().Before(restored[1].VisibleAt.Add(-time.Second)), "kept came back before its visibility timeout ended")
	require.Equal(t, "kept", aws.ToString(kept.MessageAttributes["kind"].StringValue))
	require.NoError(t, next.Close())

	_, again, err := Open(journal, emulator, log)
	require.NoError(t, err)
	require.Empty(t, again, "nothing is redelivered twice")
}
