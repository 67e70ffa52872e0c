package esm

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"
)

// receiveOne long-polls a queue until it returns a message body.
func receiveOne(t *testing.T, client *sqs.Client, url string) string {
	t.Helper()
	var body string
	waitFor(t, 10*time.Second, "message on "+url, func() bool {
		out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 1})
		require.NoError(t, err)
		if len(out.Messages) == 0 {
			return false
		}
		body = aws.ToString(out.Messages[0].Body)
		return true
	})
	return body
}

func TestDestinations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	queues, topics := newSQSClient(), newSNSClient()
	dest := NewDestinations(queues, topics)
	const body = `{"version":"1.0","requestContext":{"condition":"RetryAttemptsExhausted"}}`

	t.Run("SQS queue", func(t *testing.T) {
		t.Parallel()
		url, arn := createQueue(t, queues, uniqueName(t, "failures"), nil)
		require.NoError(t, dest.SendToDestination(ctx, arn, []byte(body)))
		require.NoError(t, dest.SendToDestination(ctx, arn, []byte(body)), "second send uses the cached URL")
		require.Equal(t, body, receiveOne(t, queues, url))
		require.Equal(t, body, receiveOne(t, queues, url))
	})

	t.Run("SNS topic", func(t *testing.T) {
		t.Parallel()
		topic, err := topics.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(uniqueName(t, "failures"))})
		require.NoError(t, err)
		url, arn := createQueue(t, queues, uniqueName(t, "subscriber"), nil)
		_, err = topics.Subscribe(ctx, &sns.SubscribeInput{
			TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(arn),
			Attributes: map[string]string{"RawMessageDelivery": "true"},
		})
		require.NoError(t, err)
		require.NoError(t, dest.SendToDestination(ctx, aws.ToString(topic.TopicArn), []byte(body)))
		require.Equal(t, body, receiveOne(t, queues, url))
	})

	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name    string
			dest    *Destinations
			arn     string
			wantErr string
		}{
			{"not an ARN", dest, "failures", "not an ARN"},
			{"unsupported service", dest, "arn:aws:s3:::bucket", `service "s3" is not sqs or sns`},
			{"unknown queue", dest, "arn:aws:sqs:us-east-1:000000000000:no-such-queue", "look up queue URL"},
			{"no SQS client", NewDestinations(nil, topics), "arn:aws:sqs:us-east-1:000000000000:q", "no SQS client"},
			{"no SNS client", NewDestinations(queues, nil), "arn:aws:sns:us-east-1:000000000000:t", "no SNS client"},
		}
		for _, tt := range tests {
			require.ErrorContains(t, tt.dest.SendToDestination(ctx, tt.arn, []byte(body)), tt.wantErr, tt.name)
		}
	})
}
