package adversary

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"
)

func newQueue(t *testing.T, client *sqs.Client, prefix string) *string {
	t.Helper()
	q, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(uniqueName(prefix))})
	require.NoError(t, err)
	return q.QueueUrl
}

func send(t *testing.T, client *sqs.Client, queue *string, n int) {
	t.Helper()
	for i := range n {
		_, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: queue, MessageBody: aws.String(fmt.Sprintf("m%d", i))})
		require.NoError(t, err)
	}
}

func receive(t *testing.T, client *sqs.Client, queue *string, max int32) []sqstypes.Message {
	t.Helper()
	out, err := client.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: queue, MaxNumberOfMessages: max,
		VisibilityTimeout: 60, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
	require.NoError(t, err)
	return out.Messages
}

// A deleted message comes back once, the same message with a higher
// ApproximateReceiveCount; its second delete deletes it.
func TestSQSRedeliverBringsADeletedMessageBack(t *testing.T) {
	t.Parallel()
	e := setup(t, "sqs.redeliver=1")
	client := sqs.NewFromConfig(e.aws)
	q := newQueue(t, client, "redeliver")
	send(t, client, q, 1)

	first := receive(t, client, q, 1)
	require.Len(t, first, 1)
	require.Equal(t, "1", first[0].Attributes["ApproximateReceiveCount"])
	_, err := client.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: q, ReceiptHandle: first[0].ReceiptHandle})
	require.NoError(t, err, "the delete is acknowledged")

	again := receive(t, client, q, 1)
	require.Len(t, again, 1, "the deleted message is delivered again")
	require.Equal(t, aws.ToString(first[0].MessageId), aws.ToString(again[0].MessageId))
	require.Equal(t, "2", again[0].Attributes["ApproximateReceiveCount"])
	out, err := client.DeleteMessageBatch(t.Context(), &sqs.DeleteMessageBatchInput{QueueUrl: q,
		Entries: []sqstypes.DeleteMessageBatchRequestEntry{{Id: aws.String("a"), ReceiptHandle: again[0].ReceiptHandle}}})
	require.NoError(t, err)
	require.Len(t, out.Successful, 1)

	require.Empty(t, receive(t, client, q, 10), "a message comes back at most once")
	require.EqualValues(t, 1, e.count(SQSRedeliver))
}

// A batch delete keeps its chosen entries and deletes the others; each kept
// entry is answered as deleted.
func TestSQSRedeliverInABatchDelete(t *testing.T) {
	t.Parallel()
	e := setup(t, "sqs.redeliver=1")
	client := sqs.NewFromConfig(e.aws)
	q := newQueue(t, client, "redeliver-batch")
	send(t, client, q, 3)
	msgs := receive(t, client, q, 10)
	require.Len(t, msgs, 3)
	var entries []sqstypes.DeleteMessageBatchRequestEntry
	for i, m := range msgs {
		entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
	}
	out, err := client.DeleteMessageBatch(t.Context(), &sqs.DeleteMessageBatchInput{QueueUrl: q, Entries: entries})
	require.NoError(t, err)
	require.Len(t, out.Successful, 3)
	require.Empty(t, out.Failed)
	back := receive(t, client, q, 10)
	require.Len(t, back, 3)
	for _, m := range back {
		require.Equal(t, "2", m.Attributes["ApproximateReceiveCount"])
	}
	require.EqualValues(t, 3, e.count(SQSRedeliver))
}

// Received messages come in another order than they were sent (kumo
// returns a standard queue's messages in the order sent).
func TestSQSReorder(t *testing.T) {
	t.Parallel()
	e := setup(t, "sqs.reorder=1")
	client := sqs.NewFromConfig(e.aws)
	q := newQueue(t, client, "reorder")
	send(t, client, q, 5)
	msgs := receive(t, client, q, 10)
	require.Len(t, msgs, 5)
	var got []string
	for _, m := range msgs {
		got = append(got, aws.ToString(m.Body))
	}
	require.ElementsMatch(t, []string{"m0", "m1", "m2", "m3", "m4"}, got)
	require.NotEqual(t, []string{"m0", "m1", "m2", "m3", "m4"}, got)
	require.EqualValues(t, 1, e.count(SQSReorder))
}

// A receive gets fewer messages than it asked for, though more wait.
func TestSQSPartialReceive(t *testing.T) {
	t.Parallel()
	e := setup(t, "sqs.partial_receive=1")
	client := sqs.NewFromConfig(e.aws)
	q := newQueue(t, client, "partial")
	send(t, client, q, 10)
	msgs := receive(t, client, q, 10)
	require.NotEmpty(t, msgs)
	require.Less(t, len(msgs), 10)
	require.EqualValues(t, 1, e.count(SQSPartialReceive))
}
