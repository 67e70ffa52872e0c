package adversary

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"
)

// A call whose answer is lost was carried out; the SDK retries it and the
// retry is carried out again (no replay): three attempts, three messages.
func TestLostAnswerWorkIsDoneAndTheRetryRunsAgain(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	client := sqs.NewFromConfig(e.aws)
	q := newQueue(t, client, "lost")
	require.NoError(t, e.adv.Set("any.lost_answer=1", 0))
	_, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String("once")})
	require.ErrorContains(t, err, "any.lost_answer", "every attempt's answer was lost")

	require.NoError(t, e.adv.Set("", 0))
	msgs := receive(t, client, q, 10)
	require.Len(t, msgs, 3, "each of the SDK's three attempts sent the message")
	require.Zero(t, e.front.RetryStats().Replayed, "no answer is replayed while the adversary is on")
	require.EqualValues(t, 2, e.front.RetryStats().CarriedOut)
	require.EqualValues(t, 3, e.count(LostAnswer))
}

// A TransactWriteItems with a ClientRequestToken is one AWS makes
// idempotent: its lost answers are counted apart.
func TestLostAnswerOfAnIdempotentCallIsCountedApart(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	db := dynamodb.NewFromConfig(e.aws)
	table := newTable(t, db)
	require.NoError(t, e.adv.Set("any.lost_answer=1", 0))
	_, err := db.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String("token-1"),
		TransactItems: []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(table), Item: item("a", "g", "v")}}}},
		func(o *dynamodb.Options) { o.RetryMaxAttempts = 2 })
	require.Error(t, err)
	require.EqualValues(t, 2, e.count(LostAnswer))
	require.EqualValues(t, 2, e.adv.Stats().IdempotentRetries)
}

// A message published once reaches a subscribed queue twice.
func TestSNSDuplicate(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	topics, queues, topic, q := subscribedQueue(t, e, "sns-dup")

	require.NoError(t, e.adv.Set("sns.duplicate=1", 0))
	_, err := topics.Publish(t.Context(), &sns.PublishInput{TopicArn: topic, Message: aws.String("hello")})
	require.NoError(t, err)
	require.NoError(t, e.adv.Set("", 0))
	msgs := receive(t, queues, q, 10)
	require.Len(t, msgs, 2)
	for _, m := range msgs {
		require.Equal(t, "hello", aws.ToString(m.Body))
	}
	require.EqualValues(t, 1, e.count(SNSDuplicate))
}

// Each message of a PublishBatch is delivered again on its own.
func TestSNSDuplicateInABatch(t *testing.T) {
	t.Parallel()
	e := setup(t, "")
	topics, queues, topic, q := subscribedQueue(t, e, "sns-dup-batch")

	require.NoError(t, e.adv.Set("sns.duplicate=1", 0))
	_, err := topics.PublishBatch(t.Context(), &sns.PublishBatchInput{TopicArn: topic, PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{
		{Id: aws.String("a"), Message: aws.String("one")}, {Id: aws.String("b"), Message: aws.String("two")}}})
	require.NoError(t, err)
	require.NoError(t, e.adv.Set("", 0))
	bodies := map[string]int{}
	for _, m := range receive(t, queues, q, 10) {
		bodies[aws.ToString(m.Body)]++
	}
	require.Equal(t, map[string]int{"one": 2, "two": 2}, bodies)
	require.EqualValues(t, 2, e.count(SNSDuplicate))
}

// subscribedQueue is a topic with a queue subscribed to it (raw delivery).
func subscribedQueue(t *testing.T, e env, prefix string) (*sns.Client, *sqs.Client, *string, *string) {
	t.Helper()
	topics, queues := sns.NewFromConfig(e.aws), sqs.NewFromConfig(e.aws)
	q := newQueue(t, queues, prefix)
	attrs, err := queues.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: q, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	require.NoError(t, err)
	topic, err := topics.CreateTopic(t.Context(), &sns.CreateTopicInput{Name: aws.String(uniqueName("topic"))})
	require.NoError(t, err)
	_, err = topics.Subscribe(t.Context(), &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
		Endpoint: aws.String(attrs.Attributes["QueueArn"]), Attributes: map[string]string{"RawMessageDelivery": "true"}})
	require.NoError(t, err)
	return topics, queues, topic.TopicArn, q
}
