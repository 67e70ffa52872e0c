package esm

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/invoke"
)

// delivery is one message as a function saw it.
type delivery struct {
	at      time.Time
	message events.SQSMessage
}

// sqsSetup is a queue on the emulator, a fake function that records every
// delivery, and a poller between them.
type sqsSetup struct {
	client   *sqs.Client
	queueURL string
	queueARN string
	fn       *fakeInvoker
	poller   *SQSPoller

	mu         sync.Mutex
	deliveries map[string][]delivery // by body
}

// newSQSSetup creates the queue (with the given attributes) and a poller;
// handle answers each invocation given its decoded event.
func newSQSSetup(t *testing.T, queueAttrs map[string]string, m SQSMapping, handle func(events.SQSEvent) invoke.Result) *sqsSetup {
	t.Helper()
	s := &sqsSetup{client: newSQSClient(), deliveries: map[string][]delivery{}}
	s.queueURL, s.queueARN = createQueue(t, s.client, uniqueName(t, "q"), queueAttrs)
	s.fn = &fakeInvoker{handle: func(_ int, payload []byte) (invoke.Result, error) {
		var ev events.SQSEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return invoke.Result{}, fmt.Errorf("invalid SQS event: %w", err)
		}
		now := time.Now()
		s.mu.Lock()
		for _, r := range ev.Records {
			s.deliveries[r.Body] = append(s.deliveries[r.Body], delivery{at: now, message: r})
		}
		s.mu.Unlock()
		if handle == nil {
			return invoke.Result{Payload: []byte("null")}, nil
		}
		return handle(ev), nil
	}}
	m.UUID = "mapping-" + t.Name()
	m.FunctionName = "worker"
	m.QueueURL = s.queueURL
	m.QueueARN = s.queueARN
	m.Enabled = true
	p, err := NewSQSPoller(m, s.client, s.fn, quietLogger())
	require.NoError(t, err)
	s.poller = p
	return s
}

func (s *sqsSetup) deliveriesOf(body string) []delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.deliveries[body])
}

func (s *sqsSetup) deliveryCounts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	counts := make(map[string]int, len(s.deliveries))
	for body, ds := range s.deliveries {
		counts[body] = len(ds)
	}
	return counts
}

// send sends the bodies in batches of ten.
func (s *sqsSetup) send(t *testing.T, bodies ...string) {
	t.Helper()
	for start := 0; start < len(bodies); start += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for i, b := range bodies[start:min(start+10, len(bodies))] {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(b)})
		}
		out, err := s.client.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(s.queueURL), Entries: entries})
		require.NoError(t, err)
		require.Empty(t, out.Failed)
	}
}

func bodies(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

func TestSQSReportBatchItemFailures(t *testing.T) {
	t.Parallel()
	client := newSQSClient()
	dlqURL, dlqARN := createQueue(t, client, uniqueName(t, "dlq"), nil)
	failing := map[string]bool{"m3": true, "m7": true}

	s := newSQSSetup(t, map[string]string{
		"VisibilityTimeout": "1",
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"2"}`, dlqARN),
	}, SQSMapping{ReportBatchItemFailures: true}, func(ev events.SQSEvent) invoke.Result {
		var failed []string
		for _, r := range ev.Records {
			if failing[r.Body] {
				failed = append(failed, r.MessageId)
			}
		}
		return batchFailures(failed...)
	})
	s.send(t, bodies("m", 10)...)
	run(t, s.poller)

	// The failures come back after the visibility timeout, fail again, and
	// the queue moves them to the DLQ on the receive after the second.
	inDLQ := map[string]bool{}
	waitFor(t, 15*time.Second, "failed messages reach the DLQ", func() bool {
		out, err := client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(dlqURL), MaxNumberOfMessages: 10, VisibilityTimeout: 60,
		})
		require.NoError(t, err)
		for _, m := range out.Messages {
			inDLQ[aws.ToString(m.Body)] = true
		}
		return len(inDLQ) == 2
	})
	require.Equal(t, map[string]bool{"m3": true, "m7": true}, inDLQ)

	counts := s.deliveryCounts()
	for _, b := range bodies("m", 10) {
		want := 1
		if failing[b] {
			want = 2 // maxReceiveCount
		}
		require.Equal(t, want, counts[b], "deliveries of %s", b)
	}
	for body := range failing {
		ds := s.deliveriesOf(body)
		require.Equal(t, "2", ds[1].message.Attributes["ApproximateReceiveCount"])
		require.GreaterOrEqual(t, ds[1].at.Sub(ds[0].at), 900*time.Millisecond, "redelivered only after the visibility timeout")
	}
	st := s.poller.Stats()
	require.EqualValues(t, 8, st.Deleted)
	require.EqualValues(t, 4, st.Failed, "two failures of two messages")
}

func TestSQSFunctionErrorRedeliversWholeBatch(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	s := newSQSSetup(t, map[string]string{"VisibilityTimeout": "1"}, SQSMapping{},
		func(events.SQSEvent) invoke.Result {
			if calls.Add(1) == 1 {
				return functionError("database unavailable")
			}
			return invoke.Result{}
		})
	s.send(t, bodies("e", 5)...)
	run(t, s.poller)

	waitFor(t, 10*time.Second, "batch redelivered and deleted", func() bool { return s.poller.Stats().Deleted == 5 })
	first := s.fn.calls()[0]
	var ev events.SQSEvent
	require.NoError(t, json.Unmarshal(first, &ev))
	require.Len(t, ev.Records, 5, "the whole batch failed")
	for _, b := range bodies("e", 5) {
		ds := s.deliveriesOf(b)
		require.Len(t, ds, 2, "deliveries of %s", b)
		require.Equal(t, "1", ds[0].message.Attributes["ApproximateReceiveCount"])
		require.Equal(t, "2", ds[1].message.Attributes["ApproximateReceiveCount"])
	}
	require.EqualValues(t, 5, s.poller.Stats().Failed)
}

func TestSQSMaximumConcurrency(t *testing.T) {
	t.Parallel()
	const limit, total = 4, 500
	s := newSQSSetup(t, map[string]string{"VisibilityTimeout": "60"}, SQSMapping{MaximumConcurrency: limit},
		func(events.SQSEvent) invoke.Result {
			time.Sleep(20 * time.Millisecond) // a slow function
			return invoke.Result{}
		})
	s.send(t, bodies("c", total)...)
	run(t, s.poller)

	waitFor(t, 30*time.Second, "every message deleted", func() bool { return s.poller.Stats().Deleted == total })
	require.Equal(t, limit, s.fn.peak(), "concurrency reaches the limit and never exceeds it")
	require.Equal(t, limit, s.poller.Stats().MaxInFlight)
	counts := s.deliveryCounts()
	require.Len(t, counts, total)
	for body, n := range counts {
		require.Equal(t, 1, n, "deliveries of %s", body)
	}
	require.Zero(t, s.poller.Stats().Failed)
}

func TestSQSBatchingWindow(t *testing.T) {
	t.Parallel()

	t.Run("gathers messages that arrive within the window", func(t *testing.T) {
		t.Parallel()
		s := newSQSSetup(t, nil, SQSMapping{BatchSize: 25, MaximumBatchingWindow: time.Second}, nil)
		run(t, s.poller)
		for _, b := range bodies("w", 3) { // separate sends, a little apart
			s.send(t, b)
			time.Sleep(50 * time.Millisecond)
		}
		waitFor(t, 10*time.Second, "batch delivered", func() bool { return s.poller.Stats().Deleted == 3 })
		require.Len(t, s.fn.calls(), 1, "one invocation for the three messages")
	})

	t.Run("a full batch does not wait for the window", func(t *testing.T) {
		t.Parallel()
		// The window is AWS's maximum, five minutes: a poller that waited
		// for it would miss the minute the test gives the batch.
		s := newSQSSetup(t, nil, SQSMapping{BatchSize: 20, MaximumBatchingWindow: MaxSQSBatchingWindow}, nil)
		s.send(t, bodies("f", 20)...)
		run(t, s.poller)
		waitFor(t, time.Minute, "full batch delivered before the window ends", func() bool { return s.poller.Stats().Deleted == 20 })
		require.Len(t, s.fn.calls(), 1)
		var ev events.SQSEvent
		require.NoError(t, json.Unmarshal(s.fn.calls()[0], &ev))
		require.Len(t, ev.Records, 20)
	})
}

// receiveCounter counts receive calls so a test can tell when the poller is
// in its long poll.
type receiveCounter struct {
	QueueClient
	receives atomic.Int64
}

func (c *receiveCounter) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	c.receives.Add(1)
	return c.QueueClient.ReceiveMessage(ctx, in, optFns...)
}

func TestSQSIdleLatency(t *testing.T) {
	t.Parallel()
	s := newSQSSetup(t, nil, SQSMapping{}, nil)
	counter := &receiveCounter{QueueClient: s.client}
	s.poller.queue = counter
	run(t, s.poller)
	// The second receive starts after the first (idle) one-second long poll
	// returned empty: the poller is now waiting in a long poll.
	waitFor(t, 5*time.Second, "poller idle in a long poll", func() bool { return counter.receives.Load() >= 2 })

	sent := time.Now()
	s.send(t, "ping")
	waitFor(t, 5*time.Second, "delivery", func() bool { return len(s.deliveriesOf("ping")) == 1 })
	// The target is 50 ms; the bound leaves room for a loaded machine while
	// still failing if the send did not wake the long poll (1 s).
	require.Less(t, s.deliveriesOf("ping")[0].at.Sub(sent), 300*time.Millisecond)
}

func TestSQSEventShape(t *testing.T) {
	t.Parallel()
	s := newSQSSetup(t, nil, SQSMapping{}, nil)
	_, err := s.client.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl:    aws.String(s.queueURL),
		MessageBody: aws.String(`{"type":"member.joined"}`),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"event_type": {DataType: aws.String("String"), StringValue: aws.String("member.joined")},
			"version":    {DataType: aws.String("Number"), StringValue: aws.String("2")},
		},
	})
	require.NoError(t, err)
	run(t, s.poller)
	waitFor(t, 5*time.Second, "delivery", func() bool { return len(s.fn.calls()) == 1 })

	payload := s.fn.calls()[0]
	var ev events.SQSEvent
	require.NoError(t, json.Unmarshal(payload, &ev))
	require.Len(t, ev.Records, 1)
	r := ev.Records[0]
	require.NotEmpty(t, r.MessageId)
	require.NotEmpty(t, r.ReceiptHandle)
	require.Equal(t, `{"type":"member.joined"}`, r.Body)
	sum := md5.Sum([]byte(r.Body))
	require.Equal(t, hex.EncodeToString(sum[:]), r.Md5OfBody)
	require.Equal(t, "aws:sqs", r.EventSource)
	require.Equal(t, s.queueARN, r.EventSourceARN)
	require.Equal(t, "us-east-1", r.AWSRegion)
	for _, a := range []string{"ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"} {
		require.NotEmpty(t, r.Attributes[a], "attribute %s", a)
	}
	require.Equal(t, "1", r.Attributes["ApproximateReceiveCount"])
	require.Equal(t, "String", r.MessageAttributes["event_type"].DataType)
	require.Equal(t, "member.joined", aws.ToString(r.MessageAttributes["event_type"].StringValue))
	require.Equal(t, "Number", r.MessageAttributes["version"].DataType)

	// Lambda's wire shape: list fields present and empty, camelCase keys.
	var raw struct {
		Records []map[string]json.RawMessage `json:"Records"`
	}
	require.NoError(t, json.Unmarshal(payload, &raw))
	var attrs map[string]map[string]any
	require.NoError(t, json.Unmarshal(raw.Records[0]["messageAttributes"], &attrs))
	require.Equal(t, map[string]any{
		"stringValue": "member.joined", "stringListValues": []any{}, "binaryListValues": []any{}, "dataType": "String",
	}, attrs["event_type"])
}

func TestSQSPartialResponse(t *testing.T) {
	t.Parallel()
	batch := []types.Message{{MessageId: aws.String("a")}, {MessageId: aws.String("b")}, {MessageId: aws.String("c")}}
	tests := []struct {
		name       string
		payload    string
		wantDelete []string
	}{
		{"null", `null`, []string{"a", "b", "c"}},
		{"empty payload", ``, []string{"a", "b", "c"}},
		{"empty object", `{}`, []string{"a", "b", "c"}},
		{"empty list", `{"batchItemFailures":[]}`, []string{"a", "b", "c"}},
		{"null list", `{"batchItemFailures":null}`, []string{"a", "b", "c"}},
		{"one failure", `{"batchItemFailures":[{"itemIdentifier":"b"}]}`, []string{"a", "c"}},
		{"all failed", `{"batchItemFailures":[{"itemIdentifier":"a"},{"itemIdentifier":"b"},{"itemIdentifier":"c"}]}`, []string{}},
		{"unknown identifier", `{"batchItemFailures":[{"itemIdentifier":"b"},{"itemIdentifier":"zzz"}]}`, nil},
		{"empty identifier", `{"batchItemFailures":[{"itemIdentifier":""}]}`, nil},
		{"missing identifier", `{"batchItemFailures":[{"id":"b"}]}`, nil},
		{"not JSON", `oops`, nil},
		{"not an object", `"ok"`, nil},
	}
	p := &SQSPoller{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			done, reason := p.succeeded(batch, []byte(tt.payload))
			if tt.wantDelete == nil {
				require.NotEmpty(t, reason)
				require.Empty(t, done)
				return
			}
			require.Empty(t, reason)
			ids := []string{}
			for _, m := range done {
				ids = append(ids, aws.ToString(m.MessageId))
			}
			require.Equal(t, tt.wantDelete, ids)
		})
	}
}

func TestSQSMappingValidation(t *testing.T) {
	t.Parallel()
	valid := SQSMapping{FunctionName: "worker", QueueURL: "http://localhost/q", QueueARN: "arn:aws:sqs:us-east-1:000000000000:q"}
	tests := []struct {
		name    string
		change  func(*SQSMapping)
		wantErr string
	}{
		{"missing function", func(m *SQSMapping) { m.FunctionName = "" }, "FunctionName is required"},
		{"missing URL", func(m *SQSMapping) { m.QueueURL = "" }, "QueueURL is required"},
		{"bad ARN", func(m *SQSMapping) { m.QueueARN = "q" }, "QueueARN"},
		{"ARN of another service", func(m *SQSMapping) { m.QueueARN = testTableARN }, "not an SQS ARN"},
		{"batch size too large", func(m *SQSMapping) { m.BatchSize = 10001 }, "BatchSize 10001"},
		{"large batch without window", func(m *SQSMapping) { m.BatchSize = 11 }, "needs a MaximumBatchingWindow"},
		{"window too long", func(m *SQSMapping) { m.MaximumBatchingWindow = 301 * time.Second }, "MaximumBatchingWindow"},
		{"concurrency below 2", func(m *SQSMapping) { m.MaximumConcurrency = 1 }, "MaximumConcurrency 1"},
		{"concurrency above 1000", func(m *SQSMapping) { m.MaximumConcurrency = 1001 }, "MaximumConcurrency 1001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := valid
			tt.change(&m)
			_, err := NewSQSPoller(m, newSQSClient(), &fakeInvoker{}, quietLogger())
			require.ErrorContains(t, err, tt.wantErr)
		})
	}

	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		p, err := NewSQSPoller(valid, newSQSClient(), &fakeInvoker{}, quietLogger())
		require.NoError(t, err)
		require.Equal(t, DefaultSQSBatchSize, p.cfg.BatchSize)
		require.Equal(t, DefaultMaximumConcurrency, p.cfg.MaximumConcurrency)
		require.NoError(t, p.Run(t.Context()), "a disabled mapping returns at once")
	})
}
