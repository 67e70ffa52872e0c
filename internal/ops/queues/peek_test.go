package queues_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/ops/opstest"
	"github.com/clubdev/club/internal/ops/queues"
)

type env struct {
	sqs *sqs.Client
	cw  *cloudwatch.Client
	q   opstest.Queues
}

func setup(t *testing.T, maxReceiveCount int) env {
	t.Helper()
	cfg := opstest.AWSConfig(opstest.Endpoint(t, nil))
	c := sqs.NewFromConfig(cfg)
	return env{sqs: c, cw: cloudwatch.NewFromConfig(cfg), q: opstest.CreateQueuePair(t, c, maxReceiveCount)}
}

// send puts n messages with bodies "<prefix>-<i>" in the queue, one call
// each so that their SentTimestamps are in order, and returns when the
// first was sent (a lower bound of its SentTimestamp).
func send(t *testing.T, c *sqs.Client, url, prefix string, n int) time.Time {
	t.Helper()
	first := time.Now()
	for i := range n {
		_, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{
			QueueUrl: aws.String(url), MessageBody: aws.String(fmt.Sprintf("%s-%02d", prefix, i)),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"type": {DataType: aws.String("String"), StringValue: aws.String("enrollment.created")},
			},
		})
		require.NoError(t, err)
	}
	return first
}

func depth(t *testing.T, c *sqs.Client, url string) queues.Depth {
	t.Helper()
	d, err := queues.GetDepth(context.Background(), c, url)
	require.NoError(t, err)
	return d
}

// receiveAll takes every visible message (a consumer would), returning bodies
// and receive counts.
func receiveAll(t *testing.T, c *sqs.Client, url string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for {
		out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 60,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		require.NoError(t, err)
		if len(out.Messages) == 0 {
			return got
		}
		for _, m := range out.Messages {
			got[*m.Body] = m.Attributes["ApproximateReceiveCount"]
		}
	}
}

func TestPeekLooksWithoutConsuming(t *testing.T) {
	t.Parallel()
	e := setup(t, 5)
	send(t, e.sqs, e.q.Source, "m", 25)

	p, err := queues.Peek(context.Background(), e.sqs, e.q.Source, queues.PeekOptions{})
	require.NoError(t, err)
	require.True(t, p.Complete)
	require.Len(t, p.Messages, 25)
	for i, m := range p.Messages {
		require.Equal(t, fmt.Sprintf("m-%02d", i), m.Body, "oldest first")
		require.Equal(t, 1, m.ReceiveCount, "the peek's receive counts")
		require.Equal(t, "enrollment.created", m.Attributes["type"])
		require.False(t, m.SentAt.IsZero())
	}

	// Every message is still there and a consumer gets all of them at once:
	// nothing deleted, nothing left hidden.
	require.EqualValues(t, 25, depth(t, e.sqs, e.q.Source).Total())
	got := receiveAll(t, e.sqs, e.q.Source)
	require.Len(t, got, 25)
	for body, count := range got {
		require.Equal(t, "2", count, "%s: one receive by the peek, one by the consumer", body)
	}
}

func TestPeekStopsAtItsLimit(t *testing.T) {
	t.Parallel()
	e := setup(t, 5)
	send(t, e.sqs, e.q.Source, "m", 15)
	p, err := queues.Peek(context.Background(), e.sqs, e.q.Source, queues.PeekOptions{Limit: 10})
	require.NoError(t, err)
	require.False(t, p.Complete)
	require.Len(t, p.Messages, 10)
	require.Len(t, receiveAll(t, e.sqs, e.q.Source), 15)
}

// cancelAfterFirstReceive cancels the peek's context as soon as its first
// receive returns, as Ctrl-C would.
type cancelAfterFirstReceive struct {
	*sqs.Client
	cancel   context.CancelFunc
	receives atomic.Int32
}

func (c *cancelAfterFirstReceive) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := c.Client.ReceiveMessage(ctx, in, opts...)
	if c.receives.Add(1) == 1 {
		c.cancel()
	}
	return out, err
}

func TestACancelledPeekStillRestoresWhatItHeld(t *testing.T) {
	t.Parallel()
	e := setup(t, 5)
	send(t, e.sqs, e.q.Source, "m", 15)
	ctx, cancel := context.WithCancel(context.Background())
	c := &cancelAfterFirstReceive{Client: e.sqs, cancel: cancel}

	_, err := queues.Peek(ctx, c, e.q.Source, queues.PeekOptions{Hold: 10 * time.Minute})
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, receiveAll(t, e.sqs, e.q.Source), 15, "the 10 held messages are visible again at once, not in 10 minutes")
}

func TestPeekRefusesFIFOQueues(t *testing.T) {
	t.Parallel()
	_, err := queues.Peek(context.Background(), nil, "http://localhost/000000000000/orders.fifo", queues.PeekOptions{})
	require.ErrorContains(t, err, "FIFO queues are not peeked")
}

func TestOldestAge(t *testing.T) {
	t.Parallel()
	e := setup(t, 5)
	ctx := context.Background()

	// A clock 90 s ahead stands in for waiting 90 s.
	const ahead = 90 * time.Second
	clock := func() time.Time { return time.Now().Add(ahead) }
	peeking := &queues.AgeProber{SQS: e.sqs, CloudWatch: e.cw, Peek: true, Now: clock}
	notPeeking := &queues.AgeProber{SQS: e.sqs, CloudWatch: e.cw, Now: clock}

	age, err := peeking.OldestAge(ctx, e.q.Source, depth(t, e.sqs, e.q.Source))
	require.NoError(t, err)
	require.Equal(t, queues.Age{Source: queues.AgeEmpty, Complete: true}, age)

	sent := send(t, e.sqs, e.q.Source, "m", 3)
	d := depth(t, e.sqs, e.q.Source)

	age, err = notPeeking.OldestAge(ctx, e.q.Source, d)
	require.NoError(t, err)
	require.Equal(t, queues.AgeUnknown, age.Source, "kumo has no CloudWatch metric and peeking is off")
	require.Contains(t, age.Note, "--peek")
	require.Equal(t, "unknown", age.String())

	age, err = peeking.OldestAge(ctx, e.q.Source, d)
	truth := clock().Sub(sent)
	require.NoError(t, err)
	require.Equal(t, queues.AgePeek, age.Source)
	require.InDelta(t, truth.Seconds(), age.Oldest.Seconds(), 1, "within a second of the truth")
	require.Equal(t, 3, age.Sampled)
	require.Equal(t, "1m30s (peek)", age.String())
}

// fakeCloudWatch serves one datapoint for every query.
type fakeCloudWatch struct {
	value float64
	at    time.Time
}

func (f fakeCloudWatch) GetMetricData(_ context.Context, in *cloudwatch.GetMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	out := &cloudwatch.GetMetricDataOutput{}
	for _, q := range in.MetricDataQueries {
		out.MetricDataResults = append(out.MetricDataResults, cwtypes.MetricDataResult{Id: q.Id, Values: []float64{f.value}, Timestamps: []time.Time{f.at}})
	}
	return out, nil
}

func TestOldestAgePrefersCloudWatch(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	p := &queues.AgeProber{
		SQS:        nil, // a peek would panic: CloudWatch must answer first
		CloudWatch: fakeCloudWatch{value: 100, at: now.Add(-2 * time.Minute)},
		Peek:       true,
		Now:        func() time.Time { return now },
	}
	age, err := p.OldestAge(context.Background(), "https://sqs.us-east-1.amazonaws.com/1/club-roster", queues.Depth{Visible: 7})
	require.NoError(t, err)
	require.Equal(t, queues.AgeCloudWatch, age.Source)
	require.Equal(t, 220*time.Second, age.Oldest, "the datapoint's age plus the time since it was taken")
}

func TestMeasureDrain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		before, after queues.Depth
		elapsed       time.Duration
		want          queues.Drain
		text          string
	}{
		{"empty", queues.Depth{Visible: 3}, queues.Depth{}, 2 * time.Second, queues.Drain{State: queues.DrainEmpty}, "empty"},
		{"draining", queues.Depth{Visible: 6000}, queues.Depth{Visible: 5900, InFlight: 50, Delayed: 10}, 2 * time.Second,
			queues.Drain{State: queues.DrainDraining, Rate: 20, ETA: 298 * time.Second}, "draining 20.0/s, ETA 4m58s"},
		{"growing", queues.Depth{Visible: 100}, queues.Depth{Visible: 110}, 2 * time.Second, queues.Drain{State: queues.DrainGrowing, Rate: -5}, "growing 5.0/s"},
		{"steady", queues.Depth{Visible: 100}, queues.Depth{Visible: 90, InFlight: 10}, 2 * time.Second, queues.Drain{State: queues.DrainSteady}, "steady"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := queues.MeasureDrain(tt.before, tt.after, tt.elapsed)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.text, got.String())
		})
	}
}
