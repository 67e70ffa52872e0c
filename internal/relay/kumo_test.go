package relay_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/outbox"
	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/internal/relay"
	"github.com/clubdev/club/internal/store"
	"github.com/clubdev/club/localcloud/testkit"
)

// The engine the tests run on now (testkit: the package runs once on kumo
// and once on moto) is shared by the whole test binary; tests isolate
// themselves with their own topics and queues.
var (
	snsClient *sns.Client
	sqsClient *sqs.Client
	ddbClient *dynamodb.Client
)

func TestMain(m *testing.M) {
	os.Exit(testkit.Run(m, func(url string) {
		creds := credentials.NewStaticCredentialsProvider("test", "test", "")
		snsClient = sns.New(sns.Options{Region: "us-east-1", BaseEndpoint: aws.String(url), Credentials: creds})
		sqsClient = sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(url), Credentials: creds})
		ddbClient = dynamodb.New(dynamodb.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(url), Credentials: creds,
			// kumo's X-Amz-Crc32 header does not match its body; the data is fine.
			DisableValidateResponseChecksum: true,
		})
	}))
}

var resourceSeq atomic.Int64

// subscribedQueue creates a queue subscribed to topic with raw delivery and
// filterPolicy, as the template's subscriptions are, and returns its URL.
func subscribedQueue(t *testing.T, ctx context.Context, topicARN, filterPolicy string) string {
	t.Helper()
	q, err := sqsClient.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("relay-test-%d", resourceSeq.Add(1)))})
	require.NoError(t, err)
	attrs, err := sqsClient.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	require.NoError(t, err)
	_, err = snsClient.Subscribe(ctx, &sns.SubscribeInput{
		TopicArn: aws.String(topicARN), Protocol: aws.String("sqs"),
		Endpoint:   aws.String(attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]),
		Attributes: map[string]string{"RawMessageDelivery": "true", "FilterPolicy": filterPolicy},
	})
	require.NoError(t, err)
	return aws.ToString(q.QueueUrl)
}

// receiveAll drains a queue until it has want messages or the deadline
// passes.
func receiveAll(t *testing.T, ctx context.Context, queueURL string, want int) []sqstypes.Message {
	t.Helper()
	var got []sqstypes.Message
	deadline := patience.Deadline()
	for len(got) < want && time.Now().Before(deadline) {
		out, err := sqsClient.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"},
		})
		require.NoError(t, err)
		got = append(got, out.Messages...)
	}
	return got
}

// queueIsEmpty checks that nothing (more) arrives in a queue.
func queueIsEmpty(t *testing.T, ctx context.Context, queueURL string) {
	t.Helper()
	out, err := sqsClient.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
	})
	require.NoError(t, err)
	require.Empty(t, out.Messages)
}

func TestSNSPublisherOnKumo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	topic, err := snsClient.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(fmt.Sprintf("club-events-%d", resourceSeq.Add(1)))})
	require.NoError(t, err)
	topicARN := aws.ToString(topic.TopicArn)
	// The template's filter policies.
	notifications := subscribedQueue(t, ctx, topicARN, `{"type": ["enrollment.created"]}`)
	roster := subscribedQueue(t, ctx, topicARN, `{"type": [{"prefix": "enrollment."}]}`)

	w := newWorld(t)
	created := w.enroll(2, time.Second)
	cancelled, err := events.New(events.NewID(), t0, events.EnrollmentCancelled{EnrollmentID: created[0].AggregateID, ClassID: w.class.ID(), StudentID: "student-0001"})
	require.NoError(t, err)
	cancelRow, err := outbox.NewRow(cancelled, t0)
	require.NoError(t, err)
	rows := append(created, cancelRow)

	p, err := relay.NewSNSPublisher(snsClient, relay.SNSConfig{TopicARN: topicARN})
	require.NoError(t, err)
	msgs := make([]relay.Message, len(rows))
	for i, r := range rows {
		msgs[i] = relay.MessageOf(r)
	}
	n, err := p.Publish(ctx, msgs)
	require.NoError(t, err)
	require.Equal(t, 3, n)

	byID := map[string]outbox.Row{}
	for _, r := range rows {
		byID[r.EventID] = r
	}
	check := func(queueURL string, want []outbox.Row) {
		got := receiveAll(t, ctx, queueURL, len(want))
		require.Len(t, got, len(want))
		seen := map[string]bool{}
		for _, m := range got {
			eventID := aws.ToString(m.MessageAttributes[relay.AttrEventID].StringValue)
			row, ok := byID[eventID]
			require.True(t, ok, "event_id attribute names a published row")
			seen[eventID] = true
			require.Equal(t, string(row.Payload), aws.ToString(m.Body), "raw delivery: the body is the envelope")
			env, err := events.Decode([]byte(aws.ToString(m.Body)))
			require.NoError(t, err)
			require.Equal(t, eventID, env.EventID)
			require.Equal(t, string(row.Type), aws.ToString(m.MessageAttributes[relay.AttrType].StringValue))
			require.Equal(t, "String", aws.ToString(m.MessageAttributes[relay.AttrType].DataType))
		}
		for _, r := range want {
			require.True(t, seen[r.EventID], "event %s delivered", r.EventID)
		}
		queueIsEmpty(t, ctx, queueURL)
	}
	check(notifications, created)
	check(roster, rows)
}

func TestSNSPublisherBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	topic, err := snsClient.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(fmt.Sprintf("club-events-%d", resourceSeq.Add(1)))})
	require.NoError(t, err)
	queueURL := subscribedQueue(t, ctx, aws.ToString(topic.TopicArn), `{"type":[{"exists":true}]}`)
	p, err := relay.NewSNSPublisher(snsClient, relay.SNSConfig{TopicARN: aws.ToString(topic.TopicArn), Batch: true})
	require.NoError(t, err)
	n, err := p.Publish(ctx, testMessages(3, 0))
	// SNS has PublishBatch; so does the local cloud's endpoint on either
	// engine (moto has it; in front of kumo, which has not, the front adds
	// it): every message is published once.
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Len(t, receiveAll(t, ctx, queueURL, 3), 3)
}

// TestSweeperOnKumo runs the sweeper as the function wires it: DynamoDB
// store (the "unpublished" index, conditional marks, leases) and the SNS
// publisher, on the emulator.
func TestSweeperOnKumo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := resourceSeq.Add(1)
	cfg := store.Config{ClubTable: fmt.Sprintf("relay-club-%d", n), OutboxTable: fmt.Sprintf("relay-outbox-%d", n)}
	require.NoError(t, store.CreateTables(ctx, ddbClient, cfg))
	st, err := store.New(ddbClient, cfg)
	require.NoError(t, err)

	c, err := class.New(events.NewID(), "teacher-1", "Go", 10, t0.Add(24*time.Hour))
	require.NoError(t, err)
	require.NoError(t, st.Classes.Create(ctx, c))
	svc, err := enrollment.NewService(enrollment.Deps{Store: st.Enrollments, Classes: st.Classes, Idempotency: st.Idempotency})
	require.NoError(t, err)
	for i := range 3 {
		student := fmt.Sprintf("student-%d", i)
		fp, err := idempotency.Fingerprint("POST", "/classes/"+c.ID()+"/enrollments", nil, student)
		require.NoError(t, err)
		_, err = svc.Enroll(ctx, enrollment.EnrollRequest{
			ClassID: c.ID(), StudentID: student, IdempotencyKey: fmt.Sprintf("key-%08d", i), RequestFingerprint: fp,
			Respond: func(enrollment.Enrollment) (idempotency.Response, error) {
				return idempotency.Response{Status: 201}, nil
			},
		})
		require.NoError(t, err)
	}
	stale, err := st.Outbox.Unpublished(ctx, time.Now().Add(time.Hour), 10)
	require.NoError(t, err)
	require.Len(t, stale, 3)

	topic, err := snsClient.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(fmt.Sprintf("club-events-%d", n))})
	require.NoError(t, err)
	queue := subscribedQueue(t, ctx, aws.ToString(topic.TopicArn), `{"type": [{"prefix": "enrollment."}]}`)
	pub, err := relay.NewSNSPublisher(snsClient, relay.SNSConfig{TopicARN: aws.ToString(topic.TopicArn)})
	require.NoError(t, err)
	r := newRelay(t, relay.Config{Routes: relay.Routes{events.KindEvent: pub}, Outbox: st.Outbox})
	// Run "an hour later", so every row is past the threshold.
	later := func() time.Time { return time.Now().Add(time.Hour) }
	newSweeper := func() *relay.Sweeper {
		s, err := relay.NewSweeper(relay.SweeperConfig{
			Relay: r, Outbox: st.Outbox, Leases: st.Leases, SweepAfter: time.Minute, Now: later,
		})
		require.NoError(t, err)
		return s
	}

	// Another sweeper holds the lease: nothing happens.
	_, err = st.Leases.Acquire(ctx, relay.DefaultLeaseName, "other", later(), relay.DefaultLeaseTTL)
	require.NoError(t, err)
	res, err := newSweeper().Sweep(ctx, "run-1")
	require.NoError(t, err)
	require.True(t, res.LeaseHeld)
	require.NoError(t, st.Leases.Release(ctx, relay.DefaultLeaseName, "other"))

	res, err = newSweeper().Sweep(ctx, "run-2")
	require.NoError(t, err)
	require.False(t, res.LeaseHeld)
	require.Equal(t, 3, res.Republished)
	require.Greater(t, res.OldestUnpublishedAge, 59*time.Minute)

	left, err := st.Outbox.Unpublished(ctx, time.Now().Add(time.Hour), 10)
	require.NoError(t, err)
	require.Empty(t, left, "every row is marked and out of the index")
	got := receiveAll(t, ctx, queue, 3)
	require.Len(t, got, 3)
	want := map[string]bool{}
	for _, row := range stale {
		want[row.EventID] = true
		stored, err := st.Outbox.Get(ctx, row.EventID)
		require.NoError(t, err)
		require.Equal(t, outbox.StatusPublished, stored.Status)
	}
	for _, m := range got {
		require.True(t, want[aws.ToString(m.MessageAttributes[relay.AttrEventID].StringValue)])
	}

	// The lease was released: the next run gets it and finds nothing to do.
	res, err = newSweeper().Sweep(ctx, "run-3")
	require.NoError(t, err)
	require.False(t, res.LeaseHeld)
	require.Zero(t, res.Stale)
	require.Zero(t, res.OldestUnpublishedAge)
}
