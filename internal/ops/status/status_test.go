package status_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/ops/opstest"
	"github.com/clubdev/club/internal/ops/queues"
	"github.com/clubdev/club/internal/ops/status"
	"github.com/clubdev/club/internal/stackfile"
)

func sendN(t *testing.T, c *sqs.Client, url string, n int) time.Time {
	t.Helper()
	first := time.Now()
	for i := range n {
		_, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(fmt.Sprint(i))})
		require.NoError(t, err)
	}
	return first
}

func TestReadOutboxCountsPendingRowsAndFindsTheOldest(t *testing.T) {
	t.Parallel()
	db := dynamodb.NewFromConfig(opstest.AWSConfig(opstest.Endpoint(t, nil)))
	f := opstest.NewFixture(t, db)
	now := time.Now().UTC().Truncate(time.Millisecond)

	empty, err := status.ReadOutbox(context.Background(), db, f.Config.OutboxTable, now)
	require.NoError(t, err)
	require.Equal(t, status.Outbox{}, empty)

	published := f.Enroll(t, "s-1", now.Add(-5*time.Minute))
	oldestPending := f.Enroll(t, "s-2", now.Add(-2*time.Minute))
	f.Enroll(t, "s-3", now.Add(-time.Minute))
	f.Publish(t, published.EventID, now.Add(-4*time.Minute))

	got, err := status.ReadOutbox(context.Background(), db, f.Config.OutboxTable, now)
	require.NoError(t, err)
	require.Equal(t, status.Outbox{
		Unpublished: 2, OldestAge: 2 * time.Minute,
		OldestEventID: oldestPending.EventID, OldestAt: now.Add(-2 * time.Minute),
	}, got)
}

func TestLocalStatsReadsTheLocalCloudsStreamLag(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/_club/stats" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `{"functions":{},"stream_mappings":{
			"RelayFunction.Outbox":{"lag":42,"checkpoint":7,"stats":{}},
			"AuditFunction.Outbox":{"lag":0}}}`)
	}))
	defer srv.Close()

	lags, err := status.LocalStats{Endpoint: srv.URL + "/"}.StreamLags(context.Background())
	require.NoError(t, err)
	require.Len(t, lags, 2)
	require.Equal(t, "AuditFunction.Outbox", lags[0].Consumer)
	require.EqualValues(t, 0, *lags[0].Records)
	require.Equal(t, "RelayFunction.Outbox", lags[1].Consumer)
	require.EqualValues(t, 42, *lags[1].Records)
	require.Equal(t, "local", lags[1].Source)

	_, err = status.LocalStats{Endpoint: srv.URL + "/nowhere"}.StreamLags(context.Background())
	require.ErrorContains(t, err, "404 Not Found")
}

// iteratorAges is a hand-written CloudWatch with an IteratorAge datapoint
// for the relay only: the other functions consume no stream.
type iteratorAges struct{ at time.Time }

func (f iteratorAges) GetMetricData(_ context.Context, in *cloudwatch.GetMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	out := &cloudwatch.GetMetricDataOutput{}
	for _, q := range in.MetricDataQueries {
		r := cwtypes.MetricDataResult{Id: q.Id}
		if *q.MetricStat.Metric.MetricName == "IteratorAge" && *q.MetricStat.Metric.Dimensions[0].Value == "club-prod-Relay" {
			r.Values, r.Timestamps = []float64{2500}, []time.Time{f.at}
		}
		out.MetricDataResults = append(out.MetricDataResults, r)
	}
	return out, nil
}

func TestIteratorAgesOnAWS(t *testing.T) {
	t.Parallel()
	now := time.Now()
	lags, err := status.IteratorAges{
		CloudWatch: iteratorAges{at: now.Add(-time.Minute)},
		Functions:  map[string]string{"RelayFunction": "club-prod-Relay", "ApiFunction": "club-prod-Api"},
		Now:        func() time.Time { return now },
	}.StreamLags(context.Background())
	require.NoError(t, err)
	require.Len(t, lags, 1)
	require.Equal(t, "club-prod-Relay", lags[0].Consumer)
	require.Equal(t, 2500*time.Millisecond, *lags[0].Age)
	require.Nil(t, lags[0].Records)
}

// countingSQS tells the test when the first round of depth reads is over,
// so that work done afterwards falls between the two samples.
type countingSQS struct {
	*sqs.Client
	calls     atomic.Int32
	firstDone chan struct{}
	after     int32
}

func (c *countingSQS) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	out, err := c.Client.GetQueueAttributes(ctx, in, opts...)
	if c.calls.Add(1) == c.after {
		close(c.firstDone)
	}
	return out, err
}

func TestCollectReportsAgeBreachDLQAndDrain(t *testing.T) {
	t.Parallel()
	statsHandler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"stream_mappings":{"RelayFunction.Outbox":{"lag":3}}}`)
	})
	endpoint := opstest.Endpoint(t, statsHandler)
	cfg := opstest.AWSConfig(endpoint)
	client := sqs.NewFromConfig(cfg)
	db := dynamodb.NewFromConfig(cfg)
	urgent := opstest.CreateQueuePair(t, client, 5)
	consumer := opstest.CreateQueuePair(t, client, 5)
	f := opstest.NewFixture(t, db)

	// A known backlog: 30 notifications, 2 dead letters, an idle consumer
	// queue; one outbox row waiting.
	sent := sendN(t, client, urgent.Source, 30)
	sendN(t, client, urgent.DLQ, 2)
	pending := f.Enroll(t, "s-1", time.Now().Add(-3*time.Minute))

	stack := &stackfile.Stack{Queues: map[string]string{
		"NotificationsQueue": urgent.Source, "NotificationsDLQ": urgent.DLQ,
		"RosterQueue": consumer.Source, "RosterDLQ": consumer.DLQ,
	}}
	cat, err := queues.NewCatalog(stack)
	require.NoError(t, err)

	// 70 s after the backlog was sent (the clock runs ahead instead of the
	// test waiting): the urgent class allows 60 s.
	clock := func() time.Time { return time.Now().Add(70 * time.Second) }
	counting := &countingSQS{Client: client, firstDone: make(chan struct{}), after: 4} // 2 queues + 2 DLQs
	c := &status.Collector{
		SQS:         counting,
		Ages:        &queues.AgeProber{SQS: client, CloudWatch: cloudwatch.NewFromConfig(cfg), Peek: true, Now: clock},
		DynamoDB:    db,
		OutboxTable: f.Config.OutboxTable,
		Streams:     status.LocalStats{Endpoint: endpoint},
		Sample:      time.Second,
		Now:         clock,
	}

	// A consumer takes 10 notifications between the two samples.
	consumed := make(chan error, 1)
	go func() {
		<-counting.firstDone
		consumed <- consume(client, urgent.Source, 10)
	}()
	r, err := c.Collect(context.Background(), cat)
	require.NoError(t, err)
	require.NoError(t, <-consumed)
	require.NoError(t, r.Incomplete())

	require.Len(t, r.Queues, 2)
	n := r.Queues[0]
	require.Equal(t, "NotificationsQueue", n.Queue.Name)
	require.Equal(t, queues.Depth{Visible: 30}, n.Depth)
	require.Equal(t, queues.AgePeek, n.Age.Source)
	require.InDelta(t, r.At.Sub(sent).Seconds(), n.Age.Oldest.Seconds(), 1, "age within a second of the truth at the report's time")
	require.True(t, n.Breached, "70 s > the urgent class's 60 s")
	require.EqualValues(t, 2, n.DLQDepth.Total())
	require.Equal(t, queues.DrainDraining, n.Drain.State)
	require.InDelta(t, 10, n.Drain.Rate, 3, "10 messages over a sample of about a second")
	require.Greater(t, n.Drain.ETA, time.Second)

	roster := r.Queues[1]
	require.Equal(t, queues.AgeEmpty, roster.Age.Source)
	require.False(t, roster.Breached)
	require.Equal(t, queues.DrainEmpty, roster.Drain.State)

	require.Equal(t, 1, r.Outbox.Unpublished)
	require.Equal(t, pending.EventID, r.Outbox.OldestEventID)
	require.InDelta(t, (3*time.Minute + 70*time.Second).Seconds(), r.Outbox.OldestAge.Seconds(), 2)

	require.Len(t, r.Streams, 1)
	require.EqualValues(t, 3, *r.Streams[0].Records)
	require.Equal(t, status.Purchases{Note: "saga not deployed"}, r.Purchases)
}

func consume(c *sqs.Client, url string, n int) error {
	ctx := context.Background()
	for n > 0 {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: int32(min(n, 10)), VisibilityTimeout: 60})
		if err != nil {
			return err
		}
		for _, m := range out.Messages {
			if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				return err
			}
			n--
		}
	}
	return nil
}

type failingCounter struct{}

func (failingCounter) CountByStatus(context.Context) (map[string]int, error) {
	return nil, fmt.Errorf("purchases table unreachable")
}

func TestCollectKeepsGoingWhenASideSectionFails(t *testing.T) {
	t.Parallel()
	endpoint := opstest.Endpoint(t, nil) // no /_club/stats here
	cfg := opstest.AWSConfig(endpoint)
	client := sqs.NewFromConfig(cfg)
	q := opstest.CreateQueuePair(t, client, 5)
	cat, err := queues.NewCatalog(&stackfile.Stack{Queues: map[string]string{"RosterQueue": q.Source}})
	require.NoError(t, err)
	c := &status.Collector{
		SQS: client, Ages: &queues.AgeProber{SQS: client, Now: time.Now},
		DynamoDB: dynamodb.NewFromConfig(cfg), OutboxTable: "no-such-table",
		Streams:      status.LocalStats{Endpoint: endpoint},
		SagaDeployed: true, Purchases: failingCounter{},
		Now: time.Now,
	}
	r, err := c.Collect(context.Background(), cat)
	require.NoError(t, err)
	require.Len(t, r.Queues, 1)
	require.Nil(t, r.Outbox)
	require.Len(t, r.Problems, 3)
	require.ErrorContains(t, r.Incomplete(), "no-such-table")
	require.ErrorContains(t, r.Incomplete(), "404")
	require.ErrorContains(t, r.Incomplete(), "purchases table unreachable")
	require.Equal(t, queues.Drain{}, r.Queues[0].Drain, "no sample, no drain")
}
