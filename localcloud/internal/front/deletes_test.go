package front

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"
)

// A delete repeated with the handle that deleted the message succeeds, as on
// SQS (an SDK retry after a lost answer repeats it); a handle never accepted
// still fails.
func TestRepeatedDeleteSucceedsLikeSQS(t *testing.T) {
	t.Parallel()
	e := newReceiptsEnv(t)
	ctx := t.Context()
	for _, body := range []string{"a", "b", "c"} {
		_, err := e.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(e.queueURL), MessageBody: aws.String(body)})
		require.NoError(t, err)
	}
	out, err := e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(e.queueURL), MaxNumberOfMessages: 10})
	require.NoError(t, err)
	require.Len(t, out.Messages, 3)

	entries := []sqstypes.DeleteMessageBatchRequestEntry{
		{Id: aws.String("0"), ReceiptHandle: out.Messages[0].ReceiptHandle},
		{Id: aws.String("1"), ReceiptHandle: out.Messages[1].ReceiptHandle},
	}
	for range 2 {
		res, err := e.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(e.queueURL), Entries: entries})
		require.NoError(t, err)
		require.Len(t, res.Successful, 2)
		require.Empty(t, res.Failed)
	}
	for range 2 {
		_, err := e.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(e.queueURL), ReceiptHandle: out.Messages[2].ReceiptHandle})
		require.NoError(t, err)
	}

	res, err := e.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(e.queueURL), Entries: []sqstypes.DeleteMessageBatchRequestEntry{
		{Id: aws.String("x"), ReceiptHandle: aws.String("never-issued")},
	}})
	require.NoError(t, err)
	require.Len(t, res.Failed, 1, "a handle never accepted still fails")
	_, err = e.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(e.queueURL), ReceiptHandle: aws.String("never-issued")})
	require.Error(t, err)

	depth, err := e.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(e.queueURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	require.NoError(t, err)
	require.Equal(t, "0", depth.Attributes["ApproximateNumberOfMessages"])
	require.Equal(t, "0", depth.Attributes["ApproximateNumberOfMessagesNotVisible"])
}
