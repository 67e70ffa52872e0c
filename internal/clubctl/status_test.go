package clubctl

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/ops/cwmetric"
	"github.com/clubdev/club/internal/ops/opstest"
	"github.com/clubdev/club/internal/stackfile"
	"github.com/clubdev/club/localcloud/alarms"
	"github.com/clubdev/club/localcloud/template"
)

// stackEnv is a stack on kumo: the club's three consumer queues with their
// DLQs, the relay-failures queue and the two tables, described by a stack
// file.
type stackEnv struct {
	endpoint  string
	stackFile string
	stack     *stackfile.Stack
	sqs       *sqs.Client
	db        *dynamodb.Client
	fixture   *opstest.Fixture
}

func newStackEnv(t *testing.T, local bool, club http.Handler) *stackEnv {
	t.Helper()
	endpoint := opstest.Endpoint(t, club)
	cfg := opstest.AWSConfig(endpoint)
	e := &stackEnv{endpoint: endpoint, sqs: sqs.NewFromConfig(cfg), db: dynamodb.NewFromConfig(cfg)}
	e.fixture = opstest.NewFixture(t, e.db)
	e.stack = &stackfile.Stack{
		Endpoint:  endpoint,
		Queues:    map[string]string{},
		Tables:    map[string]string{"ClubTable": e.fixture.Config.ClubTable, "OutboxTable": e.fixture.Config.OutboxTable},
		Functions: map[string]string{"RelayFunction": "club-Relay", "NotifierFunction": "club-Notifier"},
		Outputs:   map[string]string{},
	}
	if local {
		e.stack.IssuerKeyFile = "issuer-key.pem" // what makes a stack file the local cloud's
	}
	for _, name := range []string{"Notifications", "Analytics", "Roster"} {
		pair := opstest.CreateQueuePair(t, e.sqs, 5)
		e.stack.Queues[name+"Queue"], e.stack.Queues[name+"DLQ"] = pair.Source, pair.DLQ
	}
	relay, err := e.sqs.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(opstest.Name(t, "relay-failures"))})
	require.NoError(t, err)
	e.stack.Queues["RelayFailuresQueue"] = *relay.QueueUrl
	e.stackFile = filepath.Join(t.TempDir(), "stack.json")
	require.NoError(t, e.stack.Save(e.stackFile))
	return e
}

func (e *stackEnv) send(t *testing.T, queue string, n int, attrs map[string]string) time.Time {
	t.Helper()
	first := time.Now()
	for i := range n {
		in := &sqs.SendMessageInput{QueueUrl: aws.String(e.stack.Queues[queue]), MessageBody: aws.String(fmt.Sprintf(`{"n":%d}`, i))}
		if len(attrs) > 0 {
			in.MessageAttributes = stringAttributes(attrs)
		}
		_, err := e.sqs.SendMessage(context.Background(), in)
		require.NoError(t, err)
	}
	return first
}

// at runs clubctl against the env's endpoint with a clock shifted by ahead.
func (e *stackEnv) at(ahead time.Duration, more ...func(*Globals)) func(*Globals) {
	return func(g *Globals) {
		g.Now = func() time.Time { return time.Now().Add(ahead) }
		g.loadAWS = func(context.Context) (aws.Config, error) {
			cfg := opstest.AWSConfig("")
			cfg.BaseEndpoint = nil // the stack file names the endpoint
			return cfg, nil
		}
		for _, m := range more {
			m(g)
		}
	}
}

func TestStatusOnTheLocalCloud(t *testing.T) {
	t.Parallel()
	stats := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"stream_mappings":{"RelayFunction.Outbox":{"lag":4}}}`)
	})
	e := newStackEnv(t, true, stats)
	sent := e.send(t, "NotificationsQueue", 30, nil)
	e.send(t, "NotificationsDLQ", 2, nil)
	e.send(t, "RosterQueue", 5, nil)
	e.fixture.Enroll(t, "s-1", time.Now().Add(-time.Minute))

	const ahead = 70 * time.Second // the urgent class allows 60 s, the consumer class 300 s
	code, stdout, stderr := runWith(t, e.at(ahead), "status", "--stack-file", e.stackFile, "--sample", "200ms")
	require.Equal(t, 0, code, stderr)
	require.Empty(t, stderr)
	require.Regexp(t, `NotificationsQueue\s+urgent\s+30\s+0\s+0\s+1m1\ds \(local\)\s+1m0s\s+BREACHED\s+2\s+steady`, stdout)
	require.Regexp(t, `RosterQueue\s+consumer\s+5\s+0\s+0\s+1m1\ds \(local\)\s+5m0s\s+ok\s+0\s+steady`, stdout)
	require.Regexp(t, `AnalyticsQueue\s+consumer\s+0\s+0\s+0\s+-\s+5m0s\s+ok\s+0\s+empty`, stdout)
	require.Regexp(t, `RelayFailuresQueue\s+-\s+0\s+0\s+0\s+-\s+-\s+-\s+-\s+empty`, stdout)
	require.Regexp(t, `Outbox: 1 unpublished, oldest 2m1\ds`, stdout)
	require.Contains(t, stdout, "RelayFunction.Outbox: 4 records behind")
	require.Contains(t, stdout, "Purchases: saga not deployed")

	code, stdout, stderr = runWith(t, e.at(ahead), "status", "--stack-file", e.stackFile, "--sample", "0", "--json")
	require.Equal(t, 0, code, stderr)
	var out statusOutput
	require.NoError(t, json.Unmarshal([]byte(stdout), &out))
	require.Len(t, out.Queues, 4)
	n := out.Queues[1]
	require.Equal(t, "NotificationsQueue", n.Name)
	require.True(t, n.Breached)
	require.Equal(t, "local", n.AgeSource, "the local cloud's own record: no receive")
	require.InDelta(t, out.At.Sub(sent).Seconds(), *n.OldestAgeSeconds, 1, "within a second of the truth")
	require.Equal(t, 60.0, *n.MaxAgeSeconds)
	require.EqualValues(t, 2, *n.DLQDepth)
	require.Empty(t, n.Drain, "--sample 0 measures no drain")
	require.Equal(t, 1, out.Outbox.Unpublished)
	require.False(t, out.Purchases.Deployed)
}

// The bulk class (exports, nightly reports) is shown with its own maximum
// age, the stack's BulkMaxAgeSeconds, and is breached only past it: a
// backlog that would breach the urgent class is normal for bulk work.
func TestStatusShowsTheBulkClassWithItsMaxAge(t *testing.T) {
	t.Parallel()
	stats := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"stream_mappings":{}}`)
	})
	e := newStackEnv(t, true, stats)
	pair := opstest.CreateQueuePair(t, e.sqs, 5)
	e.stack.Queues["ExportsQueue"], e.stack.Queues["ExportsDLQ"] = pair.Source, pair.DLQ
	require.NoError(t, e.stack.Save(e.stackFile))
	e.send(t, "ExportsQueue", 4, nil)
	e.send(t, "NotificationsQueue", 1, nil)

	code, stdout, stderr := runWith(t, e.at(70*time.Second), "status", "--stack-file", e.stackFile, "--sample", "0")
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `ExportsQueue\s+bulk\s+4\s+0\s+0\s+1m1\ds \(local\)\s+15m0s\s+ok\s+0`, stdout, "70 s is nothing for bulk work")
	require.Regexp(t, `NotificationsQueue\s+urgent\s+1\s+0\s+0\s+1m1\ds \(local\)\s+1m0s\s+BREACHED`, stdout, "but breaches the urgent class")

	code, stdout, stderr = runWith(t, e.at(16*time.Minute), "status", "--stack-file", e.stackFile, "--sample", "0")
	require.Equal(t, 0, code, stderr)
	// The first run received nothing: all four are still visible.
	require.Regexp(t, `ExportsQueue\s+bulk\s+4\s+0\s+0\s+16m\d+s \(local\)\s+15m0s\s+BREACHED`, stdout)

	// The stack's own value of the class parameter is the threshold.
	e.stack.Outputs["BulkMaxAgeSeconds"] = "60"
	require.NoError(t, e.stack.Save(e.stackFile))
	code, stdout, stderr = runWith(t, e.at(70*time.Second), "status", "--stack-file", e.stackFile, "--sample", "0", "--json")
	require.Equal(t, 0, code, stderr)
	var out statusOutput
	require.NoError(t, json.Unmarshal([]byte(stdout), &out))
	var exports *queueOutput
	for i := range out.Queues {
		if out.Queues[i].Name == "ExportsQueue" {
			exports = &out.Queues[i]
		}
	}
	require.NotNil(t, exports, stdout)
	require.Equal(t, "bulk", exports.Class)
	require.Equal(t, 60.0, *exports.MaxAgeSeconds)
	require.True(t, exports.Breached)
	require.Equal(t, "ExportsDLQ", exports.DLQ)
}

// cloudWatchMetrics serves ApproximateAgeOfOldestMessage and IteratorAge
// datapoints by dimension value, as CloudWatch does on AWS.
type cloudWatchMetrics map[string]float64

func (m cloudWatchMetrics) GetMetricData(_ context.Context, in *cloudwatch.GetMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	out := &cloudwatch.GetMetricDataOutput{}
	for _, q := range in.MetricDataQueries {
		r := cwtypes.MetricDataResult{Id: q.Id}
		if v, ok := m[*q.MetricStat.Metric.Dimensions[0].Value]; ok {
			r.Values, r.Timestamps = []float64{v}, []time.Time{*in.EndTime}
		}
		out.MetricDataResults = append(out.MetricDataResults, r)
	}
	return out, nil
}

func TestStatusOnAWSUsesCloudWatchAndDoesNotPeek(t *testing.T) {
	t.Parallel()
	e := newStackEnv(t, false, nil)
	e.send(t, "NotificationsQueue", 3, nil)
	e.send(t, "RosterQueue", 3, nil)
	notifications := e.stack.Queues["NotificationsQueue"]
	metrics := cloudWatchMetrics{notifications[strings.LastIndex(notifications, "/")+1:]: 42, "club-Relay": 1500}
	withMetrics := func(g *Globals) {
		g.clients.cloudWatch = func(aws.Config) cwmetric.CloudWatch { return metrics }
	}

	code, stdout, stderr := runWith(t, e.at(0, withMetrics), "status", "--stack-file", e.stackFile, "--sample", "0")
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `NotificationsQueue\s+urgent\s+3\s+0\s+0\s+42s \(cloudwatch\)\s+1m0s\s+ok`, stdout)
	require.Regexp(t, `RosterQueue\s+consumer\s+3\s+0\s+0\s+unknown\s+5m0s\s+\?`, stdout, "no metric and no peek on AWS")
	require.Contains(t, stdout, "Note: RosterQueue: no CloudWatch datapoint; --peek reads message timestamps")
	require.Contains(t, stdout, "club-Relay: iterator age 1.5s")
	require.Regexp(t, regexp.MustCompile(`(?m)^Purchases: saga not deployed$`), stdout)

	// Nothing was received: a consumer's first receive is the first.
	out, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(e.stack.Queues["RosterQueue"]), MaxNumberOfMessages: 10, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	require.NoError(t, err)
	require.Len(t, out.Messages, 3)
	for _, m := range out.Messages {
		require.Equal(t, "1", m.Attributes["ApproximateReceiveCount"])
	}

	// --peek opts in.
	code, stdout, stderr = runWith(t, e.at(0, withMetrics), "status", "--stack-file", e.stackFile, "--sample", "0", "--peek")
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `AnalyticsQueue\s+consumer\s+0`, stdout)
}

func TestStatusErrors(t *testing.T) {
	t.Parallel()
	e := newStackEnv(t, true, nil) // no /_club/stats: the stream section fails
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no stack file", []string{"status", "--stack-file", filepath.Join(t.TempDir(), "none.json")}, 1, "stack file not found"},
		{"negative sample", []string{"status", "--stack-file", e.stackFile, "--sample", "-1s"}, 2, "--sample -1s must not be negative"},
		{"bad sample", []string{"status", "--stack-file", e.stackFile, "--sample", "often"}, 2, `invalid argument "often" for "--sample"`},
		{"zero peek limit", []string{"status", "--stack-file", e.stackFile, "--peek-limit", "0"}, 2, "--peek-limit 0 must be positive"},
		{"a section fails", []string{"status", "--stack-file", e.stackFile, "--sample", "0"}, 1, "status incomplete: stream lag: GET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runWith(t, e.at(0), tt.args...)
			require.Equal(t, tt.wantCode, code, stderr)
			require.Contains(t, stderr, tt.wantErr)
		})
	}
}

func stringAttributes(attrs map[string]string) map[string]sqstypes.MessageAttributeValue {
	out := make(map[string]sqstypes.MessageAttributeValue, len(attrs))
	for k, v := range attrs {
		out[k] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	return out
}

func TestStatusCountsPurchasesWhenTheSagaIsDeployed(t *testing.T) {
	t.Parallel()
	e := newStackEnv(t, false, nil)
	e.stack.StateMachines = map[string]string{"PurchaseStateMachine": "arn:aws:states:us-east-1:000000000000:stateMachine:club-purchase"}
	require.NoError(t, e.stack.Save(e.stackFile))
	noMetrics := func(g *Globals) {
		g.clients.cloudWatch = func(aws.Config) cwmetric.CloudWatch { return cloudWatchMetrics{} }
	}
	code, stdout, stderr := runWith(t, e.at(0, noMetrics), "status", "--stack-file", e.stackFile, "--sample", "0")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "Purchases: none\n", "the fixture's table holds a class and no purchase")
}

// TestStatusShowsTheAlarmsInAlarm: the stack's alarms, evaluated by the
// local cloud's evaluator, are read back with DescribeAlarms: one in ALARM
// is listed with its reason and its description (the runbook); another
// stack's alarm in ALARM (it notifies another topic) is not.
func TestStatusShowsTheAlarmsInAlarm(t *testing.T) {
	t.Parallel()
	stats := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"stream_mappings":{}}`)
	})
	e := newStackEnv(t, true, stats)
	ctx := context.Background()
	cfg := opstest.AWSConfig(e.endpoint)
	snsc := sns.NewFromConfig(cfg)
	ops, err := snsc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(opstest.Name(t, "ops"))})
	require.NoError(t, err)
	other, err := snsc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(opstest.Name(t, "other-ops"))})
	require.NoError(t, err)
	e.stack.Outputs["OpsTopicArn"] = *ops.TopicArn
	require.NoError(t, e.stack.Save(e.stackFile))

	dlqName := e.stack.Queues["NotificationsDLQ"][strings.LastIndexByte(e.stack.Queues["NotificationsDLQ"], '/')+1:]
	depth := func(name, topic string) template.Alarm {
		return template.Alarm{
			Name: name, Description: "Notifications reached the DLQ (runbook docs/runbooks/dlq-redrive.md).",
			Namespace: "AWS/SQS", MetricName: "ApproximateNumberOfMessagesVisible",
			Dimensions: []template.Dimension{{Name: "QueueName", Value: dlqName}},
			Statistic:  "Maximum", Period: time.Minute, EvaluationPeriods: 1,
			ComparisonOperator: "GreaterThanThreshold", TreatMissingData: "notBreaching", ActionsEnabled: true,
			AlarmActions: []string{topic}, OKActions: []string{topic},
		}
	}
	ours, theirs := opstest.Name(t, "dlq-depth"), opstest.Name(t, "their-dlq-depth")
	ev := &alarms.Evaluator{
		Alarms:     []template.Alarm{depth(ours, *ops.TopicArn), depth(theirs, *other.TopicArn)},
		CloudWatch: cloudwatch.NewFromConfig(cfg), SQS: e.sqs,
		QueueURLs: map[string]string{dlqName: e.stack.Queues["NotificationsDLQ"]},
	}
	require.NoError(t, ev.Create(ctx))
	require.NoError(t, ev.Evaluate(ctx))

	code, stdout, stderr := runWith(t, e.at(0), "status", "--stack-file", e.stackFile, "--sample", "0")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "Alarms: none in ALARM")

	e.send(t, "NotificationsDLQ", 1, nil)
	require.NoError(t, ev.Evaluate(ctx))
	code, stdout, stderr = runWith(t, e.at(0), "status", "--stack-file", e.stackFile, "--sample", "0")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "Alarms in ALARM: 1")
	require.Regexp(t, ours+` since \S+: Threshold Crossed: AWS/SQS ApproximateNumberOfMessagesVisible = 1`, stdout)
	require.Contains(t, stdout, "docs/runbooks/dlq-redrive.md")
	require.NotContains(t, stdout, theirs, "another stack's alarm")

	code, stdout, stderr = runWith(t, e.at(0), "status", "--stack-file", e.stackFile, "--sample", "0", "--json")
	require.Equal(t, 0, code, stderr)
	var out statusOutput
	require.NoError(t, json.Unmarshal([]byte(stdout), &out))
	require.Len(t, out.Alarms, 1)
	require.Equal(t, ours, out.Alarms[0].Name)
}
