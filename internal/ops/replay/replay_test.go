package replay_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/inbox"
	"github.com/clubdev/club/internal/club/projection"
	"github.com/clubdev/club/internal/ops/opstest"
	"github.com/clubdev/club/internal/ops/replay"
)

func TestTypeFilter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy string
		pass   []string
		block  []string
	}{
		{``, []string{"enrollment.created", "export.requested"}, nil},
		{`{"type": ["enrollment.created"]}`, []string{"enrollment.created"}, []string{"enrollment.cancelled", "enrollment.created.v2"}},
		{`{"type": [{"prefix": "enrollment."}]}`, []string{"enrollment.created", "enrollment.cancelled"}, []string{"export.requested"}},
		{`{"type": ["export.requested", {"prefix": "purchase."}]}`, []string{"export.requested", "purchase.requested"}, []string{"enrollment.created"}},
		{`{"type": [{"anything-but": "enrollment.created"}]}`, []string{"enrollment.cancelled"}, []string{"enrollment.created"}},
		{`{"type": [{"anything-but": ["a", "b"]}]}`, []string{"c"}, []string{"a", "b"}},
		{`{"type": [{"anything-but": {"prefix": "enrollment."}}]}`, []string{"export.requested"}, []string{"enrollment.created"}},
		{`{"type": [{"exists": true}]}`, []string{"anything"}, nil},
		{`{"type": [{"exists": false}]}`, nil, []string{"anything"}},
	}
	for _, tt := range tests {
		match, err := replay.TypeFilter(tt.policy)
		require.NoError(t, err, tt.policy)
		for _, typ := range tt.pass {
			require.True(t, match(typ), "%s lets %s through", tt.policy, typ)
		}
		for _, typ := range tt.block {
			require.False(t, match(typ), "%s blocks %s", tt.policy, typ)
		}
	}
	for policy, wantErr := range map[string]string{
		`{"type": ["a"], "tenant": ["x"]}`:  `it filters on "tenant"`,
		`{"type": "a"}`:                     "must be a list",
		`{"type": [{"numeric": [">", 1]}]}`: `operator "numeric" is not one replay understands`,
		`{"type": [1]}`:                     "want a string or one operator",
		`not json`:                          "invalid character",
	} {
		_, err := replay.TypeFilter(policy)
		require.ErrorContains(t, err, wantErr, policy)
	}
}

func TestCheckWindow(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 8, 12, 0, 0, 0, time.UTC)
	week := 7 * 24 * time.Hour
	require.NoError(t, replay.CheckWindow(now.Add(-2*24*time.Hour), now, week))
	require.NoError(t, replay.CheckWindow(now.Add(-week+replay.Margin), now, week), "exactly at the horizon")

	err := replay.CheckWindow(now.Add(-week+30*time.Minute), now, week)
	var tooOld *replay.TooOldError
	require.ErrorAs(t, err, &tooOld, "inside the margin: an inbox row could expire during the replay")
	require.Equal(t, now.Add(-week+time.Hour), tooOld.Horizon)
	require.EqualError(t, err, "the window starts at 2026-05-01T12:30:00Z, before 2026-05-01T13:00:00Z (now minus the inbox retention of 7d, plus 1h0m0s of margin): "+
		"the consumer may have forgotten those events, and delivering them again would repeat their effects (a second e-mail, a count counted twice); start the window later")
}

type env struct {
	db      *dynamodb.Client
	sqs     *sqs.Client
	sns     *sns.Client
	fixture *opstest.Fixture
}

func setup(t *testing.T) *env {
	t.Helper()
	cfg := opstest.AWSConfig(opstest.Endpoint(t, nil))
	e := &env{db: dynamodb.NewFromConfig(cfg), sqs: sqs.NewFromConfig(cfg), sns: sns.NewFromConfig(cfg)}
	e.fixture = opstest.NewFixture(t, e.db)
	return e
}

func (e *env) queue(t *testing.T) string {
	t.Helper()
	out, err := e.sqs.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(opstest.Name(t, "consumer"))})
	require.NoError(t, err)
	return *out.QueueUrl
}

func all(string) bool { return true }

// receive takes every message of a queue.
func (e *env) receive(t *testing.T, url string) []types.Message {
	t.Helper()
	var msgs []types.Message
	for {
		out, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 60, MessageAttributeNames: []string{"All"},
		})
		require.NoError(t, err)
		if len(out.Messages) == 0 {
			return msgs
		}
		for _, m := range out.Messages {
			msgs = append(msgs, m)
			_, err := e.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
	}
}

// Replaying inside the inbox retention changes nothing: every re-delivered
// event carries its original event_id and content, and the consumer's inbox
// recognises it.
func TestReplayInsideTheRetentionCausesNoSecondEffect(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	f := e.fixture
	now := time.Now().UTC()

	var published []events.Envelope
	for i := range 5 {
		env := f.Enroll(t, fmt.Sprintf("s-%d", i), now.Add(-time.Duration(5-i)*time.Hour))
		if i == 4 {
			continue // still pending: the relay owes it, replay leaves it alone
		}
		f.Publish(t, env.EventID, now)
		published = append(published, env)
	}

	// The analytics consumer processed every published event once.
	consumer := projection.NewStatsProjector(f.Store.Inbox)
	for _, env := range published {
		require.NoError(t, consumer.Apply(ctx, env))
	}
	stats := func() int64 {
		s, err := f.Store.Projections.Stats(ctx, f.Class.ID())
		require.NoError(t, err)
		return s.EnrollmentsTotal
	}
	require.EqualValues(t, 4, stats())

	sel, err := replay.Select(ctx, e.db, f.Config.OutboxTable, replay.Window{Since: now.Add(-6 * time.Hour)}, all)
	require.NoError(t, err)
	require.Equal(t, 1, sel.Pending)
	require.Len(t, sel.Rows, 4)
	for i, r := range sel.Rows {
		require.Equal(t, published[i].EventID, r.EventID, "oldest first")
	}
	require.NoError(t, replay.CheckWindow(sel.Start, now, 7*24*time.Hour))

	q := e.queue(t)
	for range 2 { // replaying twice is as harmless as once
		sent, err := replay.Send(ctx, e.sqs, q, sel.Rows, replay.SendOptions{})
		require.NoError(t, err)
		require.Equal(t, 4, sent)
	}
	msgs := e.receive(t, q)
	require.Len(t, msgs, 8)
	for _, m := range msgs {
		env, err := events.Decode([]byte(*m.Body))
		require.NoError(t, err)
		require.Equal(t, env.EventID, *m.MessageAttributes[replay.EventIDAttribute].StringValue)
		require.Equal(t, string(env.Type), *m.MessageAttributes[replay.TypeAttribute].StringValue)
		err = consumer.Apply(ctx, env)
		require.ErrorIs(t, err, inbox.ErrDuplicate, "the inbox recognises the original event_id and content")
	}
	require.EqualValues(t, 4, stats(), "no second effect")
}

func TestSelectFromAnEvent(t *testing.T) {
	t.Parallel()
	e := setup(t)
	f := e.fixture
	now := time.Now().UTC()
	var ids []string
	for i := range 4 {
		env := f.Enroll(t, fmt.Sprintf("s-%d", i), now.Add(-time.Duration(4-i)*time.Minute))
		f.Publish(t, env.EventID, now)
		ids = append(ids, env.EventID)
	}
	ctx := context.Background()
	sel, err := replay.Select(ctx, e.db, f.Config.OutboxTable, replay.Window{FromEventID: ids[1]}, all)
	require.NoError(t, err)
	require.Equal(t, now.Add(-3*time.Minute).Truncate(time.Nanosecond), sel.Start)
	var got []string
	for _, r := range sel.Rows {
		got = append(got, r.EventID)
	}
	require.Equal(t, ids[1:], got, "from the event on, inclusive")

	sel, err = replay.Select(ctx, e.db, f.Config.OutboxTable, replay.Window{FromEventID: ids[1]}, func(t string) bool { return t == "enrollment.cancelled" })
	require.NoError(t, err)
	require.Empty(t, sel.Rows)
	require.Equal(t, 3, sel.Skipped, "types the consumer does not receive")

	_, err = replay.Select(ctx, e.db, f.Config.OutboxTable, replay.Window{FromEventID: "no-such-event"}, all)
	require.ErrorIs(t, err, replay.ErrUnknownEvent)
	_, err = replay.Select(ctx, e.db, f.Config.OutboxTable, replay.Window{}, all)
	require.ErrorContains(t, err, "not both")
}

func rows(n int) []replay.Row {
	out := make([]replay.Row, n)
	for i := range out {
		out[i] = replay.Row{EventID: fmt.Sprintf("evt-%02d", i), Type: "enrollment.created", Payload: fmt.Sprintf(`{"n":%d}`, i)}
	}
	return out
}

func TestSendStopsBetweenBatches(t *testing.T) {
	t.Parallel()
	e := setup(t)
	q := e.queue(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sent, err := replay.Send(ctx, e.sqs, q, rows(25), replay.SendOptions{Rate: 1000, Progress: func(int) { cancel() }})
	require.ErrorIs(t, err, replay.ErrInterrupted)
	require.Equal(t, 10, sent, "the first batch finished, nothing after")
	require.Len(t, e.receive(t, q), 10)

	late := errors.New("the queue is late")
	checks := 0
	sent, err = replay.Send(context.Background(), e.sqs, q, rows(25), replay.SendOptions{CheckEvery: time.Nanosecond, Check: func(context.Context) error {
		if checks++; checks == 2 {
			return late
		}
		return nil
	}})
	require.ErrorIs(t, err, late)
	require.Equal(t, 10, sent)
}

// failSecond fails the second entry of every batch.
type failSecond struct{ *sqs.Client }

func (f failSecond) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out, err := f.Client.SendMessageBatch(ctx, in, opts...)
	if err != nil || len(in.Entries) < 2 {
		return out, err
	}
	out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: in.Entries[1].Id, Code: aws.String("Throttled"), Message: aws.String("slow down")})
	return out, nil
}

func TestSendReportsOnlyAPrefixAsSent(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sent, err := replay.Send(context.Background(), failSecond{e.sqs}, e.queue(t), rows(5), replay.SendOptions{})
	require.ErrorContains(t, err, "event evt-01: Throttled: slow down")
	require.Equal(t, 1, sent, "rows after a failed one count as unsent: resuming sends them again, harmlessly")
}

func TestFindSubscription(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	topic, err := e.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(opstest.Name(t, "events"))})
	require.NoError(t, err)
	q := e.queue(t)
	attrs, err := e.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	require.NoError(t, err)
	queueARN := attrs.Attributes["QueueArn"]
	_, err = e.sns.Subscribe(ctx, &sns.SubscribeInput{
		TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(queueARN),
		Attributes: map[string]string{"RawMessageDelivery": "true", "FilterPolicy": `{"type": ["enrollment.created"]}`},
	})
	require.NoError(t, err)

	sub, err := replay.FindSubscription(ctx, e.sns, []string{*topic.TopicArn}, queueARN)
	require.NoError(t, err)
	require.True(t, sub.Raw)
	require.JSONEq(t, `{"type": ["enrollment.created"]}`, sub.FilterPolicy)
	require.Equal(t, *topic.TopicArn, sub.TopicARN)

	_, err = replay.FindSubscription(ctx, e.sns, []string{*topic.TopicArn}, queueARN+"-other")
	require.ErrorIs(t, err, replay.ErrNoSubscription)
}
