package front

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
)

// sqsOnKumo is an SQS client of a front on kumo, and a new queue.
func sqsOnKumo(t *testing.T, attrs map[string]string) (*sqs.Client, string, string) {
	t.Helper()
	u, _ := frontOnKumo(t)
	c := sqs.NewFromConfig(sdkConfig(u, "test", "test"))
	q, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(uniqueName("fix")), Attributes: attrs})
	require.NoError(t, err)
	return c, aws.ToString(q.QueueUrl), u
}

// TestReceiveGivesOnlyTheAttributesAskedFor: kumo returned every message
// attribute and none of their digests whatever a receive asked for.
func TestReceiveGivesOnlyTheAttributesAskedFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, q, _ := sqsOnKumo(t, map[string]string{"VisibilityTimeout": "0"})
	attrs := map[string]sqstypes.MessageAttributeValue{
		"kind": {DataType: aws.String("String"), StringValue: aws.String("a")},
		"blob": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 0xff}},
	}
	sent, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("m"), MessageAttributes: attrs})
	require.NoError(t, err)
	require.NotEmpty(t, aws.ToString(sent.MD5OfMessageAttributes), "the send's digest")

	none, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q})
	require.NoError(t, err)
	require.Len(t, none.Messages, 1)
	require.Empty(t, none.Messages[0].MessageAttributes, "none asked for")
	require.Empty(t, none.Messages[0].Attributes)

	all, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q, MessageAttributeNames: []string{"All"},
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp}})
	require.NoError(t, err)
	require.Len(t, all.Messages, 1)
	m := all.Messages[0]
	require.Len(t, m.MessageAttributes, 2)
	require.Equal(t, []byte{0, 0xff}, m.MessageAttributes["blob"].BinaryValue)
	require.Equal(t, aws.ToString(sent.MD5OfMessageAttributes), aws.ToString(m.MD5OfMessageAttributes), "checked by the SDK too")
	require.Len(t, m.Attributes, 1)
	require.NotEmpty(t, m.Attributes["SentTimestamp"])
}

// TestOversizedMessageIsRefused: kumo accepted a 1 MiB + 1 byte body.
func TestOversizedMessageIsRefused(t *testing.T) {
	t.Parallel()
	c, q, _ := sqsOnKumo(t, map[string]string{"MaximumMessageSize": "1048576"})
	_, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String(strings.Repeat("x", 1<<20+1))})
	var apiErr smithy.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, "InvalidParameterValue", apiErr.ErrorCode())
	require.Contains(t, apiErr.ErrorMessage(), "shorter than 1048576 bytes")
}

// TestSQSErrorIsQueryCompatible: kumo's JSON error had no
// x-amzn-query-error header, and its __type was the Query code, which the
// SDK did not recognise as QueueDoesNotExist.
func TestSQSErrorIsQueryCompatible(t *testing.T) {
	t.Parallel()
	c, _, _ := sqsOnKumo(t, nil)
	_, err := c.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("no-such-queue")})
	var missing *sqstypes.QueueDoesNotExist
	require.ErrorAs(t, err, &missing)
	require.Equal(t, "AWS.SimpleQueueService.NonExistentQueue", missing.ErrorCode())
}

// TestQueueURLNamesTheFront: kumo's queue URLs always said localhost:4566.
func TestQueueURLNamesTheFront(t *testing.T) {
	t.Parallel()
	c, q, front := sqsOnKumo(t, nil)
	fu, err := url.Parse(front)
	require.NoError(t, err)
	qu, err := url.Parse(q)
	require.NoError(t, err)
	require.Equal(t, fu.Host, qu.Host)
	_, err = c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("reachable")})
	require.NoError(t, err)
}

// TestExpiredVisibilityCountsAsVisible: kumo kept a message whose
// visibility timeout ran out counted as not visible until someone received.
func TestExpiredVisibilityCountsAsVisible(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, q, _ := sqsOnKumo(t, nil)
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("m")})
	require.NoError(t, err)
	got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q, VisibilityTimeout: 1})
	require.NoError(t, err)
	require.Len(t, got.Messages, 1)
	deadline := patience.Deadline()
	for {
		out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &q, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
		require.NoError(t, err)
		if out.Attributes["ApproximateNumberOfMessages"] == "1" {
			require.Equal(t, "0", out.Attributes["ApproximateNumberOfMessagesNotVisible"])
			break
		}
		require.True(t, time.Now().Before(deadline), "still not visible: %v", out.Attributes)
		time.Sleep(50 * time.Millisecond)
	}
	// Received again, it is in flight again.
	again, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q, VisibilityTimeout: 30})
	require.NoError(t, err)
	require.Len(t, again.Messages, 1)
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &q, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	require.NoError(t, err)
	require.Equal(t, []string{"0", "1"}, []string{out.Attributes["ApproximateNumberOfMessages"], out.Attributes["ApproximateNumberOfMessagesNotVisible"]})
}
