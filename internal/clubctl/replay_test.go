package clubctl

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/ops/opstest"
)

// subscribe wires the env's consumer queues to a topic as the template does:
// raw delivery, filtered on the type attribute. The roster queue is left
// without a subscription.
func (e *stackEnv) subscribe(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	client := sns.NewFromConfig(opstest.AWSConfig(e.endpoint))
	topic, err := client.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(opstest.Name(t, "events"))})
	require.NoError(t, err)
	for queue, policy := range map[string]string{
		"NotificationsQueue": `{"type": ["enrollment.created"]}`,
		"AnalyticsQueue":     `{"type": [{"prefix": "enrollment."}]}`,
	} {
		attrs, err := e.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(e.stack.Queues[queue]), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
		})
		require.NoError(t, err)
		_, err = client.Subscribe(ctx, &sns.SubscribeInput{
			TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(attrs.Attributes["QueueArn"]),
			Attributes: map[string]string{"RawMessageDelivery": "true", "FilterPolicy": policy},
		})
		require.NoError(t, err)
	}
	e.stack.Topics = map[string]string{"ClubEventsTopic": *topic.TopicArn}
	require.NoError(t, e.stack.Save(e.stackFile))
}

// published enrolls n students with created_at ago, ago-1m, ... and marks
// their events published; it returns the event ids, oldest first.
func (e *stackEnv) published(t *testing.T, n int, ago time.Duration) []string {
	t.Helper()
	var ids []string
	for i := range n {
		env := e.fixture.Enroll(t, fmt.Sprintf("s-%d", i), time.Now().Add(-ago+time.Duration(i)*time.Minute))
		e.fixture.Publish(t, env.EventID, time.Now())
		ids = append(ids, env.EventID)
	}
	return ids
}

func (e *stackEnv) received(t *testing.T, queue string) (ids []string) {
	t.Helper()
	for {
		out, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(e.stack.Queues[queue]), MaxNumberOfMessages: 10, VisibilityTimeout: 60, MessageAttributeNames: []string{"All"},
		})
		require.NoError(t, err)
		if len(out.Messages) == 0 {
			return ids
		}
		for _, m := range out.Messages {
			require.Equal(t, "enrollment.created", *m.MessageAttributes["type"].StringValue)
			ids = append(ids, *m.MessageAttributes["event_id"].StringValue)
			_, err := e.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(e.stack.Queues[queue]), ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
	}
}

func TestReplayABoundedBatchThenTheRest(t *testing.T) {
	t.Parallel()
	e := newStackEnv(t, true, nil)
	e.subscribe(t)
	ids := e.published(t, 5, time.Hour)
	e.fixture.Enroll(t, "pending", time.Now().Add(-30*time.Minute)) // not published yet
	run := func(args ...string) (int, string, string) {
		return runWith(t, e.at(0), append([]string{"replay", "--stack-file", e.stackFile, "--inbox-retention", "7d"}, args...)...)
	}

	code, stdout, stderr := run("--consumer", "notifications", "--since", "2h", "--dry-run")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, ids[0])
	require.Contains(t, stdout, "dry run: would replay 5 events to NotificationsQueue, about 500ms at 10/s")
	require.Contains(t, stdout, "6 events, 1 still unpublished (left to the relay), 0 of types NotificationsQueue does not receive")
	require.Empty(t, e.received(t, "NotificationsQueue"), "a dry run sends nothing")

	code, stdout, stderr = run("--consumer", "notifications", "--since", "2h", "--max", "2", "--rate", "0")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "replayed 2 events to NotificationsQueue")
	require.Contains(t, stdout, "next: --from "+ids[2])
	require.Equal(t, ids[:2], e.received(t, "NotificationsQueue"))

	code, stdout, stderr = run("--consumer", "NotificationsQueue", "--from", ids[2], "--json")
	require.Equal(t, 0, code, stderr)
	var out replayOutput
	require.NoError(t, json.Unmarshal([]byte(stdout), &out))
	require.Equal(t, 3, out.Sent)
	require.Empty(t, out.NextFrom)
	require.ElementsMatch(t, ids[2:], e.received(t, "NotificationsQueue"))
}

func TestReplayRefusesAWindowBeyondTheInboxRetention(t *testing.T) {
	t.Parallel()
	e := newStackEnv(t, true, nil)
	e.subscribe(t)
	e.stack.Outputs["InboxRetentionDays"] = "2"
	require.NoError(t, e.stack.Save(e.stackFile))
	old := e.published(t, 2, 3*24*time.Hour)

	code, stdout, stderr := runWith(t, e.at(0), "replay", "--stack-file", e.stackFile, "--consumer", "analytics", "--since", "3d")
	require.Equal(t, 3, code, stderr)
	require.Empty(t, stdout)
	require.Contains(t, stderr, "clubctl: refused: the window starts at")
	require.Contains(t, stderr, "now minus the inbox retention of 2d, plus 1h0m0s of margin")
	require.Contains(t, stderr, "delivering them again would repeat their effects")
	require.Empty(t, e.received(t, "AnalyticsQueue"))

	code, _, stderr = runWith(t, e.at(0), "replay", "--stack-file", e.stackFile, "--consumer", "analytics", "--from", old[0])
	require.Equal(t, 3, code, "the --from event's own time counts: %s", stderr)

	// With a longer retention (the flag wins over the stack) the same window is safe.
	code, stdout, stderr = runWith(t, e.at(0), "replay", "--stack-file", e.stackFile, "--consumer", "analytics", "--since", "73h", "--inbox-retention", "4d")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "replayed 2 events to AnalyticsQueue")
}

func TestReplayWatchesTheConsumersQueue(t *testing.T) {
	t.Parallel()
	e := newStackEnv(t, true, nil)
	e.subscribe(t)
	e.published(t, 2, time.Hour)
	e.send(t, "NotificationsQueue", 3, nil) // live traffic, two minutes old by the clock below
	code, _, stderr := runWith(t, e.at(2*time.Minute), "replay", "--stack-file", e.stackFile, "--consumer", "notifications", "--since", "2h", "--inbox-retention", "7d")
	require.Equal(t, 3, code, stderr)
	require.Contains(t, stderr, "NotificationsQueue's oldest message is 2m0s old, over the urgent class limit of 1m0s")

	code, stdout, stderr := runWith(t, e.at(2*time.Minute), "replay", "--stack-file", e.stackFile, "--consumer", "notifications", "--since", "2h", "--inbox-retention", "7d", "--force")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "replayed 2 events")
}

func TestReplayErrors(t *testing.T) {
	t.Parallel()
	e := newStackEnv(t, true, nil)
	e.subscribe(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no window", []string{"--consumer", "analytics"}, 2, "at least one of the flags in the group [since from] is required"},
		{"both windows", []string{"--consumer", "analytics", "--since", "1h", "--from", "x"}, 2, "if any flags in the group [since from] are set none of the others can be"},
		{"no consumer", []string{"--since", "1h"}, 2, `required flag(s) "consumer" not set`},
		{"bad since", []string{"--consumer", "analytics", "--since", "yesterday"}, 2, `--since "yesterday": want an RFC 3339 time`},
		{"bad retention", []string{"--consumer", "analytics", "--since", "1h", "--inbox-retention", "long"}, 2, `--inbox-retention "long"`},
		{"unknown consumer", []string{"--consumer", "billing", "--since", "1h"}, 1, `unknown queue "billing"`},
		{"no subscription", []string{"--consumer", "roster", "--since", "1h"}, 1, "no topic of the stack feeds RosterQueue: pass --type"},
		{"unknown event", []string{"--consumer", "analytics", "--from", "no-such-event"}, 1, "no such event in the outbox: no-such-event"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runWith(t, e.at(0), append([]string{"replay", "--stack-file", e.stackFile}, tt.args...)...)
			require.Equal(t, tt.wantCode, code, stderr)
			require.Empty(t, stdout)
			require.Contains(t, stderr, tt.wantErr)
		})
	}

	// --type stands in for a missing subscription.
	code, stdout, stderr := runWith(t, e.at(0), "replay", "--stack-file", e.stackFile, "--consumer", "roster", "--since", "1h", "--type", "enrollment.created", "--dry-run")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "dry run: would replay 0 events to RosterQueue")
	require.Contains(t, stderr, "note: the stack file has no InboxRetentionDays; assuming the template's default of 7 days")
}
