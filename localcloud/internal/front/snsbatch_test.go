package front

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"
)

// PublishBatch, which kumo lacks, delivers each entry like a Publish of its
// own (attributes, filter policies, raw delivery) and is counted once.
func TestSNSPublishBatchFansOutEachEntry(t *testing.T) {
	url, counter := frontOnKumo(t)
	cfg := sdkConfig(url, "local", "local")
	snsc, sqsc := sns.NewFromConfig(cfg), sqs.NewFromConfig(cfg)
	ctx := context.Background()

	topic, err := snsc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("front-batch-events")})
	require.NoError(t, err)
	q, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("front-batch-created")})
	require.NoError(t, err)
	qa, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	require.NoError(t, err)
	_, err = snsc.Subscribe(ctx, &sns.SubscribeInput{
		TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(qa.Attributes["QueueArn"]),
		Attributes: map[string]string{"RawMessageDelivery": "true", "FilterPolicy": `{"type": ["enrollment.created"]}`},
	})
	require.NoError(t, err)

	entry := func(id, typ, body string) snstypes.PublishBatchRequestEntry {
		return snstypes.PublishBatchRequestEntry{Id: aws.String(id), Message: aws.String(body), MessageAttributes: map[string]snstypes.MessageAttributeValue{
			"type":     {DataType: aws.String("String"), StringValue: aws.String(typ)},
			"event_id": {DataType: aws.String("String"), StringValue: aws.String("ev-" + id)},
		}}
	}
	counter.Reset()
	out, err := snsc.PublishBatch(ctx, &sns.PublishBatchInput{TopicArn: topic.TopicArn, PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{
		entry("0", "enrollment.created", `{"n":0}`), entry("1", "enrollment.cancelled", `{"n":1}`), entry("2", "enrollment.created", `{"n":2}`),
	}})
	require.NoError(t, err)
	require.Empty(t, out.Failed)
	require.Len(t, out.Successful, 3)
	for i, s := range out.Successful {
		require.Equal(t, []string{"0", "1", "2"}[i], aws.ToString(s.Id))
		require.NotEmpty(t, aws.ToString(s.MessageId))
	}
	require.Equal(t, []OpCount{{Op: Op{Service: "sns", Operation: "PublishBatch"}, Count: 1}}, counter.Snapshot(), "one request, as the client made it")

	got := map[string]string{}
	for len(got) < 2 {
		r, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}})
		require.NoError(t, err)
		require.NotEmpty(t, r.Messages, "the created entries arrive")
		for _, m := range r.Messages {
			got[aws.ToString(m.MessageAttributes["event_id"].StringValue)] = aws.ToString(m.Body)
		}
	}
	require.Equal(t, map[string]string{"ev-0": `{"n":0}`, "ev-2": `{"n":2}`}, got, "the filter policy applied per entry")

	_, err = snsc.PublishBatch(ctx, &sns.PublishBatchInput{TopicArn: topic.TopicArn, PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{
		entry("same", "enrollment.created", "a"), entry("same", "enrollment.created", "b"),
	}})
	require.ErrorContains(t, err, "BatchEntryIdsNotDistinct")
}
