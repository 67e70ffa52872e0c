package conformance_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
)

// A message sent to a standard queue is received with the body it was sent
// with and the MD5 of that body.
func TestSQSSendReceiveKeepsTheBody(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ReceiveMessage.html")
	ctx := context.Background()
	c := sqs.NewFromConfig(awsConfig(t))
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("conformance-send-receive")})
	require.NoError(t, err)
	sent, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("hello, queue")})
	require.NoError(t, err)
	got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 1, WaitTimeSeconds: 1})
	require.NoError(t, err)
	require.Len(t, got.Messages, 1)
	require.Equal(t, "hello, queue", aws.ToString(got.Messages[0].Body))
	require.Equal(t, aws.ToString(sent.MD5OfMessageBody), aws.ToString(got.Messages[0].MD5OfBody))
}
