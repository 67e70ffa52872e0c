package sqsquery

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"
)

// TestSDKPassesThrough drives the front with aws-sdk-go-v2, which speaks the
// JSON protocol: its calls must reach the emulator untouched and work as
// they do without the translator.
func TestSDKPassesThrough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := newSDKClient()
	before := jsonCalls.Load()

	queue := createQueueSDK(t, map[string]string{"VisibilityTimeout": "30"})
	_, err := client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:    aws.String(queue),
		MessageBody: aws.String("<b>json & co</b>"),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"kind": {DataType: aws.String("String"), StringValue: aws.String("order")},
			"blob": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 255}},
		},
	})
	require.NoError(t, err)

	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(queue),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		WaitTimeSeconds:             1,
	})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1)
	m := out.Messages[0]
	require.Equal(t, "<b>json & co</b>", aws.ToString(m.Body))
	require.Equal(t, "order", aws.ToString(m.MessageAttributes["kind"].StringValue))
	require.Equal(t, []byte{0, 1, 255}, m.MessageAttributes["blob"].BinaryValue)
	require.Equal(t, "1", m.Attributes["ApproximateReceiveCount"])

	_, err = client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(uniqueName(t) + "-missing")})
	// kumo names this error by its Query code even over JSON, so the SDK
	// sees a generic API error rather than *types.QueueDoesNotExist; what
	// matters here is that the answer is the emulator's, unchanged.
	var apiErr smithy.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, "AWS.SimpleQueueService.NonExistentQueue", apiErr.ErrorCode())

	// Create, send, receive and the failed lookup: at least four JSON calls.
	require.GreaterOrEqual(t, jsonCalls.Load()-before, int64(4))
}
