package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/ops/status"
)

// opsSubscriber subscribes a new queue to the stack's ops topic and returns
// a function that reads the alarm notifications it received so far.
func opsSubscriber(t *testing.T) func() []map[string]any {
	t.Helper()
	ctx := context.Background()
	topic := stack.file.Outputs["OpsTopicArn"]
	require.NotEmpty(t, topic, "the stack has an ops topic")
	q, err := stack.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(id("ops-subscriber"))})
	require.NoError(t, err)
	attrs, err := stack.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	require.NoError(t, err)
	sub, err := sns.NewFromConfig(stack.aws).Subscribe(ctx, &sns.SubscribeInput{
		TopicArn: aws.String(topic), Protocol: aws.String("sqs"), Endpoint: aws.String(attrs.Attributes["QueueArn"]),
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = sns.NewFromConfig(stack.aws).Unsubscribe(context.Background(), &sns.UnsubscribeInput{SubscriptionArn: sub.SubscriptionArn})
		_, _ = stack.sqs.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})
	})
	var seen []map[string]any
	return func() []map[string]any {
		out, err := stack.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10})
		require.NoError(t, err)
		for _, m := range out.Messages {
			var env struct{ Message string }
			require.NoError(t, json.Unmarshal([]byte(*m.Body), &env))
			var n map[string]any
			require.NoError(t, json.Unmarshal([]byte(env.Message), &n), env.Message)
			seen = append(seen, n)
			_, err := stack.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
		return seen
	}
}

// notified reports whether an alarm whose name contains alarm went to state.
func notified(ns []map[string]any, alarm, state string) map[string]any {
	for _, n := range ns {
		if name, _ := n["AlarmName"].(string); strings.Contains(name, alarm) && n["NewStateValue"] == state {
			return n
		}
	}
	return nil
}

// emptyDLQ deletes whatever an earlier test left in a dead-letter queue.
func emptyDLQ(t *testing.T, queue string) {
	t.Helper()
	eventually(t, 30*time.Second, queue+" empty", func() bool {
		for _, m := range receiveAll(t, queue) {
			_, err := stack.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(stack.file.Queues[queue]), ReceiptHandle: m.ReceiptHandle})
			require.NoError(t, err)
		}
		return queueDepth(t, queue) == 0
	})
}

// exportsDLQ is held by the tests that read ExportsDLQ: a receive hides
// the dead letter TestDLQAlarmReachesTheOpsTopic put there from the alarm
// (ApproximateNumberOfMessagesVisible).
var exportsDLQ sync.Mutex

// A dead letter in ExportsDLQ fires the DLQ-depth alarm on the local cloud;
// its notification reaches a subscriber of the ops topic, naming the
// runbook; the stack's alarms in ALARM (what clubctl status shows) list it;
// once the dead letter is gone the alarm clears and says so on the same
// topic.
//
// Parallel: it waits out an alarm period (a minute) beside the other long
// waits. The DLQ alarms are alike; the exports' is the one no sequential
// test dead-letters into (the roster's and the analytics' have the poison
// test's dead letters, and their alarm would first have to clear, a whole
// period later), and the one parallel test that reads ExportsDLQ waits for
// this one (exportsDLQ).
func TestDLQAlarmReachesTheOpsTopic(t *testing.T) {
	t.Parallel()
	exportsDLQ.Lock()
	defer exportsDLQ.Unlock()
	const alarm, dlq = "ExportsDLQDepthAlarm", "ExportsDLQ"
	cw := cloudwatch.NewFromConfig(stack.aws)
	emptyDLQ(t, dlq)
	inAlarm := func() []status.Alarm {
		alarms, err := status.ReadAlarms(context.Background(), cw, stack.file.Outputs["OpsTopicArn"])
		require.NoError(t, err)
		var ours []status.Alarm
		for _, a := range alarms {
			if strings.Contains(a.Name, alarm) {
				ours = append(ours, a)
			}
		}
		return ours
	}
	// The alarm clears once a whole Period (60 s) holds no dead letter.
	eventually(t, 3*time.Minute, "the alarm is not in ALARM", func() bool { return len(inAlarm()) == 0 })
	notifications := opsSubscriber(t)

	sendEnvelope(t, dlq, `{"dead":"letter"}`)
	var fired map[string]any
	eventually(t, 60*time.Second, "the ops topic's subscriber hears the alarm", func() bool {
		fired = notified(notifications(), alarm, "ALARM")
		return fired != nil
	})
	require.Contains(t, fired["AlarmDescription"], "docs/runbooks/dlq-redrive.md", "the notification names the runbook")
	require.Contains(t, fired["NewStateReason"], "ApproximateNumberOfMessagesVisible")
	listed := inAlarm()
	require.Len(t, listed, 1, "clubctl status lists it among the alarms in ALARM")
	require.Contains(t, listed[0].Description, "docs/runbooks/dlq-redrive.md")

	// Only an OK after the ALARM counts: the alarms' first evaluation (from
	// no data to OK) may reach the subscriber too, on a slow engine.
	firedAt := len(notifications())
	emptyDLQ(t, dlq)
	eventually(t, 3*time.Minute, "the alarm clears on the same topic, a Period after the last dead letter", func() bool {
		cleared := notified(notifications()[firedAt:], alarm, "OK")
		return cleared != nil && cleared["OldStateValue"] == "ALARM"
	})
	require.Empty(t, inAlarm())
}
