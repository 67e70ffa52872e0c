package alarms_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/alarms"
	"github.com/clubdev/club/localcloud/template"
)

// alarmNotification is the CloudWatch alarm notification as SNS carries it.
type alarmNotification struct {
	AlarmName        string
	AlarmDescription string
	NewStateValue    string
	OldStateValue    string
	NewStateReason   string
}

// TestDLQDepthAlarmNotifiesItsTopic: a dead-letter queue's depth alarm,
// created from the template's model, goes to ALARM when a message arrives
// and back to OK once a whole Period (Maximum over 60 s) has passed without
// it; each change reaches a subscriber of the
// alarm's topic with the description naming the runbook, and DescribeAlarms
// tells the state.
func TestDLQDepthAlarmNotifiesItsTopic(t *testing.T) {
	srv := kumo.NewServer()
	t.Cleanup(srv.Close)
	cfg := aws.Config{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	}
	ctx := context.Background()
	c := &clock{t: t0}
	sqsc, snsc, cw := sqs.NewFromConfig(cfg), sns.NewFromConfig(cfg), cloudwatch.NewFromConfig(cfg)

	dlq, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("alarm-dlq")})
	require.NoError(t, err)
	inbox, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("ops-inbox")})
	require.NoError(t, err)
	inboxArn, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: inbox.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	require.NoError(t, err)
	topic, err := snsc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("ops")})
	require.NoError(t, err)
	_, err = snsc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(inboxArn.Attributes["QueueArn"])})
	require.NoError(t, err)

	ev := &alarms.Evaluator{
		Alarms: []template.Alarm{{
			Name: "dlq-depth", Description: "Dead letters (runbook docs/runbooks/dlq-redrive.md).",
			Namespace: "AWS/SQS", MetricName: "ApproximateNumberOfMessagesVisible",
			Dimensions: []template.Dimension{{Name: "QueueName", Value: "alarm-dlq"}},
			Statistic:  "Maximum", Period: time.Minute, EvaluationPeriods: 1, Threshold: 0,
			ComparisonOperator: "GreaterThanThreshold", TreatMissingData: "notBreaching", ActionsEnabled: true,
			AlarmActions: []string{*topic.TopicArn}, OKActions: []string{*topic.TopicArn},
		}},
		CloudWatch: cw, SQS: sqsc,
		QueueURLs: map[string]string{"alarm-dlq": *dlq.QueueUrl},
		Now:       c.now,
	}
	require.NoError(t, ev.Create(ctx))

	notifications := func() []alarmNotification {
		var out []alarmNotification
		for {
			got, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: inbox.QueueUrl, MaxNumberOfMessages: 10})
			require.NoError(t, err)
			if len(got.Messages) == 0 {
				return out
			}
			for _, m := range got.Messages {
				var env struct{ Message string }
				require.NoError(t, json.Unmarshal([]byte(*m.Body), &env))
				var n alarmNotification
				require.NoError(t, json.Unmarshal([]byte(env.Message), &n), env.Message)
				out = append(out, n)
				_, err := sqsc.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: inbox.QueueUrl, ReceiptHandle: m.ReceiptHandle})
				require.NoError(t, err)
			}
		}
	}
	state := func() string {
		out, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{"dlq-depth"}})
		require.NoError(t, err)
		require.Len(t, out.MetricAlarms, 1)
		return string(out.MetricAlarms[0].StateValue)
	}

	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateOK, state())
	first := notifications()
	require.Len(t, first, 1, "INSUFFICIENT_DATA → OK notifies the OK actions")
	require.Equal(t, "OK", first[0].NewStateValue)

	_, err = sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: dlq.QueueUrl, MessageBody: aws.String("dead")})
	require.NoError(t, err)
	c.advance(5 * time.Second)
	require.NoError(t, ev.Evaluate(ctx))
	c.advance(5 * time.Second)
	require.NoError(t, ev.Evaluate(ctx), "no change, no second notification")
	require.Equal(t, alarms.StateAlarm, state())
	fired := notifications()
	require.Len(t, fired, 1)
	require.Equal(t, "dlq-depth", fired[0].AlarmName)
	require.Equal(t, "ALARM", fired[0].NewStateValue)
	require.Equal(t, "OK", fired[0].OldStateValue)
	require.Contains(t, fired[0].AlarmDescription, "docs/runbooks/dlq-redrive.md", "the notification names the runbook")
	require.Contains(t, fired[0].NewStateReason, "ApproximateNumberOfMessagesVisible = 1")

	inAlarm, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{StateValue: cwtypes.StateValueAlarm})
	require.NoError(t, err)
	require.Len(t, inAlarm.MetricAlarms, 1)

	got, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: dlq.QueueUrl})
	require.NoError(t, err)
	require.Len(t, got.Messages, 1)
	_, err = sqsc.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: dlq.QueueUrl, ReceiptHandle: got.Messages[0].ReceiptHandle})
	require.NoError(t, err)
	c.advance(5 * time.Second)
	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateAlarm, state(), "the Period's Maximum is still 1")
	require.Empty(t, notifications())
	c.advance(time.Minute)
	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateOK, state())
	cleared := notifications()
	require.Len(t, cleared, 1)
	require.Equal(t, "OK", cleared[0].NewStateValue)
	require.Equal(t, "ALARM", cleared[0].OldStateValue)
}
