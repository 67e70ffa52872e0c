package conformance_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/alarms"
	"github.com/clubdev/club/localcloud/template"
)

const alarmEvaluationDoc = "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html#alarm-evaluation"

// alarmStates keeps the states the evaluator sets (the alarms live in the
// local cloud's CloudWatch, not in the engine under test).
type alarmStates struct {
	mu     sync.Mutex
	states map[string]string
}

func (a *alarmStates) PutMetricAlarm(context.Context, *cloudwatch.PutMetricAlarmInput, ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricAlarmOutput, error) {
	return &cloudwatch.PutMetricAlarmOutput{}, nil
}

func (a *alarmStates) SetAlarmState(_ context.Context, in *cloudwatch.SetAlarmStateInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.SetAlarmStateOutput, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.states == nil {
		a.states = map[string]string{}
	}
	a.states[aws.ToString(in.AlarmName)] = string(in.StateValue)
	return &cloudwatch.SetAlarmStateOutput{}, nil
}

func (a *alarmStates) of(name string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.states[name]
}

// A queue-depth alarm (Maximum over 60 s) on the engine's queue goes to
// ALARM with a message and stays there for the Period after the message
// is gone: the statistic is over the Period, not the value now.
func TestAlarmQueueDepthIsAStatisticOverThePeriod(t *testing.T) {
	cite(t, alarmEvaluationDoc)
	ctx := context.Background()
	c := sqs.NewFromConfig(msgConfig(t))
	q := newQueue(t, c, "conformance-alarm-depth", nil)
	now := time.Now()
	states := &alarmStates{}
	name := q[strings.LastIndexByte(q, '/')+1:]
	ev := &alarms.Evaluator{
		Alarms: []template.Alarm{{Name: "depth", Namespace: "AWS/SQS", MetricName: "ApproximateNumberOfMessagesVisible",
			Dimensions: []template.Dimension{{Name: "QueueName", Value: name}}, Statistic: "Maximum", Period: time.Minute,
			EvaluationPeriods: 1, ComparisonOperator: "GreaterThanThreshold", TreatMissingData: "notBreaching"}},
		CloudWatch: states, SQS: c, QueueURLs: map[string]string{name: q}, Now: func() time.Time { return now },
	}
	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateOK, states.of("depth"))
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("dead letter")})
	require.NoError(t, err)
	now = now.Add(5 * time.Second)
	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateAlarm, states.of("depth"))
	_, err = c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: &q})
	require.NoError(t, err)
	now = now.Add(5 * time.Second)
	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateAlarm, states.of("depth"), "the Period's Maximum is still 1")
	now = now.Add(time.Minute)
	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateOK, states.of("depth"))
}

// An alarm on a custom namespace is evaluated on the metrics the functions
// emit in Embedded Metric Format (NotificationsPendingAlarm's Club
// PendingNotificationAge), not treated as "no data".
func TestAlarmOnAnEMFMetric(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html")
	now := time.Now()
	metrics, states := alarms.NewMetrics(), &alarmStates{}
	ev := &alarms.Evaluator{
		Alarms: []template.Alarm{{Name: "pending", Namespace: "Club", MetricName: "PendingNotificationAge",
			Dimensions: []template.Dimension{{Name: "Function", Value: "notifier"}}, Statistic: "Maximum", Period: time.Minute,
			EvaluationPeriods: 1, Threshold: 60, ComparisonOperator: "GreaterThanThreshold", TreatMissingData: "notBreaching"}},
		CloudWatch: states, Metrics: metrics, Now: func() time.Time { return now },
	}
	_, err := metrics.PutEMF(fmt.Appendf(nil, `{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"Club","Dimensions":[["Function"]],"Metrics":[{"Name":"PendingNotificationAge","Unit":"Seconds"}]}]},"Function":"notifier","PendingNotificationAge":[61.5]}`, now.UnixMilli()))
	require.NoError(t, err)
	now = now.Add(time.Second)
	require.NoError(t, ev.Evaluate(context.Background()))
	require.Equal(t, alarms.StateAlarm, states.of("pending"))
}
