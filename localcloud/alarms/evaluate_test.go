package alarms_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/alarms"
	"github.com/clubdev/club/localcloud/template"
)

// fakeCloudWatch keeps the states the evaluator sets.
type fakeCloudWatch struct {
	mu      sync.Mutex
	states  map[string]string
	reasons map[string]string
	changes int
}

func (f *fakeCloudWatch) PutMetricAlarm(context.Context, *cloudwatch.PutMetricAlarmInput, ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricAlarmOutput, error) {
	return &cloudwatch.PutMetricAlarmOutput{}, nil
}

func (f *fakeCloudWatch) SetAlarmState(_ context.Context, in *cloudwatch.SetAlarmStateInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.SetAlarmStateOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.states == nil {
		f.states, f.reasons = map[string]string{}, map[string]string{}
	}
	f.states[*in.AlarmName], f.reasons[*in.AlarmName] = string(in.StateValue), *in.StateReason
	f.changes++
	return &cloudwatch.SetAlarmStateOutput{}, nil
}

func (f *fakeCloudWatch) state(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.states[name]
}

// clock is a settable time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

var t0 = time.Date(2026, 12, 3, 13, 0, 0, 0, time.UTC)

// pendingAlarm is the template's NotificationsPendingAlarm.
func pendingAlarm() template.Alarm {
	return template.Alarm{
		Name: "pending", Namespace: "Club", MetricName: "PendingNotificationAge",
		Dimensions: []template.Dimension{{Name: "Function", Value: "notifier"}},
		Statistic:  "Maximum", Period: time.Minute, EvaluationPeriods: 1, Threshold: 60,
		ComparisonOperator: "GreaterThanThreshold", TreatMissingData: "notBreaching", ActionsEnabled: true,
	}
}

// emfLine is a line as the notifier writes it (package internal/emf).
func emfLine(at time.Time, ages ...float64) []byte {
	vals := ""
	for i, a := range ages {
		if i > 0 {
			vals += ","
		}
		vals += fmt.Sprint(a)
	}
	return fmt.Appendf(nil, `{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"Club","Dimensions":[["Function"]],"Metrics":[{"Name":"PendingNotificationAge","Unit":"Seconds"}]}]},"Function":"notifier","PendingNotificationAge":[%s]}`,
		at.UnixMilli(), vals)
}

// TestCustomMetricFromEMFFiresAndClears: the notifier's EMF metric (a
// custom namespace, on main "no data" whatever it said) fires the alarm
// when its Maximum over the Period crosses the threshold, stays in ALARM
// while that datapoint is within the Period, and clears only when the
// Period holds no breaching datapoint.
func TestCustomMetricFromEMFFiresAndClears(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, cw, m := &clock{t: t0}, &fakeCloudWatch{}, alarms.NewMetrics()
	ev := &alarms.Evaluator{Alarms: []template.Alarm{pendingAlarm()}, CloudWatch: cw, Metrics: m, Now: c.now}

	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateOK, cw.state("pending"), "no data, notBreaching")

	n, err := m.PutEMF(emfLine(c.t, 12.5, 75))
	require.NoError(t, err)
	require.Equal(t, 2, n)
	c.advance(time.Second)
	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateAlarm, cw.state("pending"), "Maximum 75 > 60")
	require.Contains(t, cw.reasons["pending"], "Club PendingNotificationAge = 75")

	c.advance(30 * time.Second)
	m.Put("Club", "PendingNotificationAge", map[string]string{"Function": "notifier"}, c.t, 3)
	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateAlarm, cw.state("pending"), "75 is still within the last 60 s")

	c.advance(31 * time.Second)
	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateOK, cw.state("pending"), "the Period holds only 3 now")

	c.advance(time.Minute)
	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateOK, cw.state("pending"), "no data, notBreaching")
}

// TestMetricIdentityIsTheExactDimensionSet: a datapoint of another
// function, or without dimensions, is another metric.
func TestMetricIdentityIsTheExactDimensionSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, cw, m := &clock{t: t0}, &fakeCloudWatch{}, alarms.NewMetrics()
	a := pendingAlarm()
	a.TreatMissingData = "missing"
	ev := &alarms.Evaluator{Alarms: []template.Alarm{a}, CloudWatch: cw, Metrics: m, Now: c.now}
	m.Put("Club", "PendingNotificationAge", map[string]string{"Function": "api"}, c.t, 500)
	m.Put("Club", "PendingNotificationAge", nil, c.t, 500)
	m.Put("Club", "PendingNotificationAge", map[string]string{"Function": "notifier", "Queue": "q"}, c.t, 500)
	c.advance(time.Second)
	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateInsufficientData, cw.state("pending"))
}

// TestStatisticPeriodsAndDatapointsToAlarm: the statistic is computed over
// each Period, and M of N periods must breach.
func TestStatisticPeriodsAndDatapointsToAlarm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dims := map[string]string{"Function": "notifier"}
	for _, tc := range []struct {
		statistic string
		want      string
	}{
		{"Maximum", alarms.StateOK},     // 40 is not > 60
		{"Sum", alarms.StateAlarm},      // 40+30 > 60
		{"Average", alarms.StateOK},     // 35
		{"Minimum", alarms.StateOK},     // 30
		{"SampleCount", alarms.StateOK}, // 2
	} {
		t.Run(tc.statistic, func(t *testing.T) {
			c, cw, m := &clock{t: t0}, &fakeCloudWatch{}, alarms.NewMetrics()
			a := pendingAlarm()
			a.Statistic = tc.statistic
			ev := &alarms.Evaluator{Alarms: []template.Alarm{a}, CloudWatch: cw, Metrics: m, Now: c.now}
			m.Put("Club", "PendingNotificationAge", dims, c.t, 40, 30)
			c.advance(time.Second)
			require.NoError(t, ev.Evaluate(ctx))
			require.Equal(t, tc.want, cw.state("pending"))
		})
	}

	t.Run("2 of 3 periods", func(t *testing.T) {
		c, cw, m := &clock{t: t0}, &fakeCloudWatch{}, alarms.NewMetrics()
		a := pendingAlarm()
		a.EvaluationPeriods, a.DatapointsToAlarm = 3, 2
		ev := &alarms.Evaluator{Alarms: []template.Alarm{a}, CloudWatch: cw, Metrics: m, Now: c.now}
		m.Put("Club", "PendingNotificationAge", dims, c.t, 90)
		c.advance(time.Second)
		require.NoError(t, ev.Evaluate(ctx))
		require.Equal(t, alarms.StateOK, cw.state("pending"), "1 breaching period of 3")
		c.advance(time.Minute)
		m.Put("Club", "PendingNotificationAge", dims, c.t, 91)
		c.advance(time.Second)
		require.NoError(t, ev.Evaluate(ctx))
		require.Equal(t, alarms.StateAlarm, cw.state("pending"), "2 breaching periods of 3")
	})
}

// TestUnknownAgeIsNotZero: a queue whose messages nobody has dated yet
// (on main: "0 s old", so the age alarm said OK) gives no datapoint: the
// alarm follows TreatMissingData, and a known age fires it.
func TestUnknownAgeIsNotZero(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, cw := &clock{t: t0}, &fakeCloudWatch{}
	age, known := 0.0, false
	ev := &alarms.Evaluator{
		Alarms: []template.Alarm{{
			Name: "age", Namespace: "AWS/SQS", MetricName: "ApproximateAgeOfOldestMessage",
			Dimensions: []template.Dimension{{Name: "QueueName", Value: "q"}},
			Statistic:  "Maximum", Period: time.Minute, EvaluationPeriods: 1, Threshold: 60,
			ComparisonOperator: "GreaterThanThreshold", TreatMissingData: "missing",
		}},
		CloudWatch: cw, Now: c.now, QueueURLs: map[string]string{"q": "http://localhost/000000000000/q"},
		Ages: func(string) (float64, bool) { return age, known },
	}
	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateInsufficientData, cw.state("age"), "an unknown age is no datapoint, not 0 s")
	age, known = 61, true
	c.advance(5 * time.Second)
	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateAlarm, cw.state("age"))
}

// fakeSFN lists failed executions.
type fakeSFN struct{ failed []sfntypes.ExecutionListItem }

func (f *fakeSFN) ListExecutions(_ context.Context, in *sfn.ListExecutionsInput, _ ...func(*sfn.Options)) (*sfn.ListExecutionsOutput, error) {
	if in.StatusFilter != sfntypes.ExecutionStatusFailed {
		return nil, fmt.Errorf("asked for %q", in.StatusFilter)
	}
	return &sfn.ListExecutionsOutput{Executions: f.failed}, nil
}

// TestFailedExecutionsAreCounted: AWS/States ExecutionsFailed (Sum) fires
// for an execution that failed within the Period, and clears after it.
func TestFailedExecutionsAreCounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const machine = "arn:aws:states:us-east-1:000000000000:stateMachine:purchase"
	c, cw, sf := &clock{t: t0}, &fakeCloudWatch{}, &fakeSFN{}
	ev := &alarms.Evaluator{
		Alarms: []template.Alarm{{
			Name: "failed", Namespace: "AWS/States", MetricName: "ExecutionsFailed",
			Dimensions: []template.Dimension{{Name: "StateMachineArn", Value: machine}},
			Statistic:  "Sum", Period: time.Minute, EvaluationPeriods: 1, Threshold: 0,
			ComparisonOperator: "GreaterThanThreshold", TreatMissingData: "notBreaching",
		}},
		CloudWatch: cw, StepFunctions: sf, Now: c.now,
	}
	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateOK, cw.state("failed"))
	stop := c.t
	sf.failed = []sfntypes.ExecutionListItem{{ExecutionArn: aws.String(machine + ":x"), StopDate: &stop}}
	c.advance(5 * time.Second)
	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateAlarm, cw.state("failed"))
	require.Contains(t, cw.reasons["failed"], "ExecutionsFailed = 1")
	c.advance(time.Minute)
	require.NoError(t, ev.Evaluate(ctx))
	require.Equal(t, alarms.StateOK, cw.state("failed"), "the same execution is counted once")
}

// TestAlarmsItCannotEvaluateAreRefused: an alarm on a metric the local
// cloud does not produce would never fire; it is refused at Create, named,
// instead of sitting in OK. Every alarm of the template is evaluable.
func TestAlarmsItCannotEvaluateAreRefused(t *testing.T) {
	t.Parallel()
	base := pendingAlarm()
	for name, change := range map[string]func(*template.Alarm){
		"a Lambda metric": func(a *template.Alarm) { a.Namespace, a.MetricName = "AWS/Lambda", "Errors" },
		"metric math":     func(a *template.Alarm) { a.Metrics = []byte(`[{"Id":"m1"}]`) },
		"a percentile":    func(a *template.Alarm) { a.Statistic, a.ExtendedStatistic = "", "p99" },
		"an SQS metric without its queue": func(a *template.Alarm) {
			a.Namespace, a.MetricName, a.Dimensions = "AWS/SQS", "ApproximateNumberOfMessagesVisible", nil
		},
	} {
		a := base
		change(&a)
		cw := &fakeCloudWatch{}
		err := (&alarms.Evaluator{Alarms: []template.Alarm{a}, CloudWatch: cw}).Create(context.Background())
		require.ErrorIs(t, err, alarms.ErrNotEvaluated, name)
		require.Contains(t, err.Error(), "alarm pending", name)
	}

	st, err := template.Load(filepath.Join("..", "..", "infra", "template.yaml"), template.Options{})
	require.NoError(t, err)
	for _, a := range st.Alarms {
		require.NoError(t, alarms.Evaluable(a), a.Source)
	}
}
