package alarms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/clubdev/club/localcloud/template"
)

// CloudWatch is the part of *cloudwatch.Client the evaluator uses.
type CloudWatch interface {
	PutMetricAlarm(ctx context.Context, in *cloudwatch.PutMetricAlarmInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricAlarmOutput, error)
	SetAlarmState(ctx context.Context, in *cloudwatch.SetAlarmStateInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.SetAlarmStateOutput, error)
}

// SQS is the part of *sqs.Client the evaluator uses.
type SQS interface {
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// QueueAges gives the age of a queue's oldest message in seconds, read
// without receiving (the local cloud's sqsage.Tracker): 0 for an empty
// queue; ok is false when the age is not known (the queue holds messages
// the tracker has not dated yet), and then the alarm gets no datapoint:
// an unknown age is never read as 0.
type QueueAges func(queueURL string) (seconds float64, ok bool)

// StepFunctions is the part of *sfn.Client the evaluator uses.
type StepFunctions interface {
	ListExecutions(ctx context.Context, in *sfn.ListExecutionsInput, opts ...func(*sfn.Options)) (*sfn.ListExecutionsOutput, error)
}

// States of an alarm.
const (
	StateOK               = "OK"
	StateAlarm            = "ALARM"
	StateInsufficientData = "INSUFFICIENT_DATA"
)

// DefaultInterval is how often the alarms are evaluated.
const DefaultInterval = 5 * time.Second

// Evaluator creates the template's alarms in the emulator and evaluates
// them. Run it in one goroutine.
type Evaluator struct {
	Alarms     []template.Alarm
	CloudWatch CloudWatch
	SQS        SQS
	Ages       QueueAges
	// StepFunctions lists failed executions for AWS/States ExecutionsFailed.
	StepFunctions StepFunctions
	// Metrics holds the datapoints alarms are evaluated on: the
	// functions' own (custom namespaces, fed from their EMF log lines by
	// the local cloud) and the service metrics the evaluator reads. Nil:
	// a store of its own, which only the service metrics feed.
	Metrics *Metrics
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// QueueURLs maps a queue name (the QueueName dimension) to its URL.
	QueueURLs map[string]string
	// Notify, when set, publishes the notification of a state change to
	// each topic of the alarm's actions itself. Leave it nil when the
	// emulator that keeps the alarms publishes them (kumo does, on
	// SetAlarmState); set it when the topics live elsewhere (the moto
	// engine: the alarms stay in kumo, the topics are moto's).
	Notify func(ctx context.Context, topicARN, subject string, message []byte) error
	// Region names the region in notifications (default us-east-1).
	Region string
	// AccountID is the account in notifications.
	AccountID string
	// Interval between evaluations (default DefaultInterval).
	Interval time.Duration
	Log      *slog.Logger

	state  map[string]string          // alarm name → state last set
	failed map[string]map[string]bool // state machine ARN → failed executions recorded
}

// Create puts every alarm, with its actions, into the emulator. An alarm
// the evaluator cannot evaluate as CloudWatch would (a service metric it
// cannot read, metric math, a percentile) is refused, named, before any is
// created: an alarm that could never fire locally must not look armed.
func (e *Evaluator) Create(ctx context.Context) error {
	var errs []error
	for _, a := range e.Alarms {
		if err := Evaluable(a); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, a := range e.Alarms {
		in := &cloudwatch.PutMetricAlarmInput{
			AlarmName:          aws.String(a.Name),
			AlarmDescription:   aws.String(a.Description),
			Namespace:          aws.String(a.Namespace),
			MetricName:         aws.String(a.MetricName),
			Statistic:          cwtypes.Statistic(a.Statistic),
			Period:             aws.Int32(int32(a.Period / time.Second)),
			EvaluationPeriods:  aws.Int32(int32(max(a.EvaluationPeriods, 1))),
			Threshold:          aws.Float64(a.Threshold),
			ComparisonOperator: cwtypes.ComparisonOperator(a.ComparisonOperator),
			TreatMissingData:   aws.String(a.TreatMissingData),
			ActionsEnabled:     aws.Bool(a.ActionsEnabled),
			AlarmActions:       a.AlarmActions,
			OKActions:          a.OKActions,
		}
		for _, d := range a.Dimensions {
			in.Dimensions = append(in.Dimensions, cwtypes.Dimension{Name: aws.String(d.Name), Value: aws.String(d.Value)})
		}
		if _, err := e.CloudWatch.PutMetricAlarm(ctx, in); err != nil {
			errs = append(errs, fmt.Errorf("alarm %s: %w", a.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Run evaluates the alarms every Interval until ctx ends.
func (e *Evaluator) Run(ctx context.Context) error {
	interval := e.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := e.Evaluate(ctx); err != nil && ctx.Err() == nil {
			e.log().Warn("alarm evaluation", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// ErrNotEvaluated marks an alarm the local cloud cannot evaluate.
var ErrNotEvaluated = errors.New("not evaluated by the local cloud")

// serviceMetrics are the metrics of AWS namespaces the evaluator reads
// itself; every other AWS/ metric is refused.
var serviceMetrics = map[string]map[string]string{ // namespace → metric → dimension it needs
	"AWS/SQS": {
		"ApproximateNumberOfMessagesVisible":    "QueueName",
		"ApproximateNumberOfMessagesNotVisible": "QueueName",
		"ApproximateNumberOfMessagesDelayed":    "QueueName",
		"ApproximateAgeOfOldestMessage":         "QueueName",
	},
	"AWS/States": {"ExecutionsFailed": "StateMachineArn"},
}

// Evaluable says whether the local cloud can evaluate an alarm as
// CloudWatch does; the error names the alarm and what it cannot do.
func Evaluable(a template.Alarm) error {
	refuse := func(what string) error {
		return fmt.Errorf("alarm %s: %s is %w", a.Name, what, ErrNotEvaluated)
	}
	switch {
	case len(a.Metrics) > 0:
		return refuse("a metric-math alarm (Metrics)")
	case a.ExtendedStatistic != "":
		return refuse("the extended statistic " + a.ExtendedStatistic)
	case !knownStatistic(a.Statistic):
		return refuse(fmt.Sprintf("the statistic %q", a.Statistic))
	case a.Period <= 0:
		return refuse("an alarm without a Period")
	}
	if !strings.HasPrefix(a.Namespace, "AWS/") {
		return nil // the functions' own metrics, from their EMF lines
	}
	dim, ok := serviceMetrics[a.Namespace][a.MetricName]
	if !ok {
		return refuse(fmt.Sprintf("the metric %s %s", a.Namespace, a.MetricName))
	}
	if len(a.Dimensions) != 1 || a.Dimensions[0].Name != dim {
		return refuse(fmt.Sprintf("%s %s without exactly the dimension %s", a.Namespace, a.MetricName, dim))
	}
	return nil
}

func (e *Evaluator) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Evaluate reads the service metrics the alarms use into Metrics, then
// evaluates every alarm as CloudWatch does
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html#alarm-evaluation):
// the statistic of each of the last EvaluationPeriods periods of Period,
// ALARM when at least DatapointsToAlarm of them breach, missing periods
// treated by TreatMissingData. It sets the state of those whose state
// changed.
func (e *Evaluator) Evaluate(ctx context.Context) error {
	if e.state == nil {
		e.state, e.failed = map[string]string{}, map[string]map[string]bool{}
	}
	if e.Metrics == nil {
		e.Metrics = NewMetrics()
	}
	now := e.now()
	var errs []error
	for _, a := range e.Alarms {
		if err := e.collect(ctx, a, now); err != nil {
			errs = append(errs, fmt.Errorf("alarm %s: %w", a.Name, err))
		}
	}
	for _, a := range e.Alarms {
		next, reason := e.next(a, now)
		if next == "" || next == e.state[a.Name] {
			continue
		}
		_, err := e.CloudWatch.SetAlarmState(ctx, &cloudwatch.SetAlarmStateInput{
			AlarmName: aws.String(a.Name), StateValue: cwtypes.StateValue(next), StateReason: aws.String(reason),
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("alarm %s: set state %s: %w", a.Name, next, err))
			continue
		}
		if next == StateAlarm || e.state[a.Name] == StateAlarm {
			e.log().Info("alarm state changed", "alarm", a.Name, "from", e.state[a.Name], "to", next, "reason", reason)
		}
		if err := e.notify(ctx, a, e.state[a.Name], next, reason); err != nil {
			errs = append(errs, fmt.Errorf("alarm %s: notify: %w", a.Name, err))
		}
		e.state[a.Name] = next
	}
	return errors.Join(errs...)
}

// notify publishes a state change to the alarm's topics when Notify is set,
// in the shape of CloudWatch's SNS notification
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-sns-notifications.html).
func (e *Evaluator) notify(ctx context.Context, a template.Alarm, from, to, reason string) error {
	if e.Notify == nil || !a.ActionsEnabled {
		return nil
	}
	topics := a.OKActions
	switch to {
	case StateAlarm:
		topics = a.AlarmActions
	case StateInsufficientData:
		topics = a.InsufficientDataActions
	}
	if len(topics) == 0 {
		return nil
	}
	if from == "" {
		from = StateInsufficientData
	}
	region := e.Region
	if region == "" {
		region = "us-east-1"
	}
	dims := make([]map[string]string, 0, len(a.Dimensions))
	for _, d := range a.Dimensions {
		dims = append(dims, map[string]string{"name": d.Name, "value": d.Value})
	}
	msg, err := json.Marshal(map[string]any{
		"AlarmName": a.Name, "AlarmDescription": a.Description, "AWSAccountId": e.AccountID,
		"NewStateValue": to, "NewStateReason": reason, "OldStateValue": from,
		"StateChangeTime": time.Now().UTC().Format("2006-01-02T15:04:05.000-0700"), "Region": region,
		"Trigger": map[string]any{
			"MetricName": a.MetricName, "Namespace": a.Namespace, "Statistic": a.Statistic, "Dimensions": dims,
			"Period": int(a.Period / time.Second), "EvaluationPeriods": max(a.EvaluationPeriods, 1),
			"ComparisonOperator": a.ComparisonOperator, "Threshold": a.Threshold, "TreatMissingData": a.TreatMissingData,
		},
	})
	if err != nil {
		return err
	}
	subject := fmt.Sprintf("%s: %q in %s", to, a.Name, region)
	var errs []error
	for _, topic := range topics {
		if err := e.Notify(ctx, topic, subject, msg); err != nil {
			errs = append(errs, fmt.Errorf("topic %s: %w", topic, err))
		}
	}
	return errors.Join(errs...)
}

// next is the state an alarm should be in now; "" leaves it as it is.
func (e *Evaluator) next(a template.Alarm, now time.Time) (state, reason string) {
	periods := max(a.EvaluationPeriods, 1)
	needed := a.DatapointsToAlarm
	if needed <= 0 {
		needed = periods
	}
	dims := dimensions(a)
	var (
		present, breaching int
		latest             float64
		haveLatest         bool
	)
	for i := range periods {
		to := now.Add(-time.Duration(i) * a.Period)
		st, ok := e.Metrics.Window(a.Namespace, a.MetricName, dims, to.Add(-a.Period), to)
		if !ok {
			if a.TreatMissingData == "breaching" {
				breaching++
			}
			continue
		}
		v, _ := st.Value(a.Statistic)
		present++
		if !haveLatest {
			latest, haveLatest = v, true
		}
		if breaches(a.ComparisonOperator, v, a.Threshold) {
			breaching++
		}
	}
	window := fmt.Sprintf("%s over %d s, %d of %d periods", a.Statistic, int(a.Period/time.Second), breaching, periods)
	if present == 0 {
		switch a.TreatMissingData {
		case "breaching":
			return StateAlarm, "no data, treated as breaching"
		case "ignore":
			return "", ""
		case "notBreaching":
			return StateOK, "no data, treated as not breaching"
		default: // missing, CloudWatch's default
			return StateInsufficientData, "no data"
		}
	}
	if breaching >= needed {
		return StateAlarm, fmt.Sprintf("Threshold Crossed: %s %s = %s, %s the threshold (%s) (%s)",
			a.Namespace, a.MetricName, formatValue(latest), comparisonText(a.ComparisonOperator), formatValue(a.Threshold), window)
	}
	return StateOK, fmt.Sprintf("%s %s = %s, not %s the threshold (%s) (%s)",
		a.Namespace, a.MetricName, formatValue(latest), comparisonText(a.ComparisonOperator), formatValue(a.Threshold), window)
}

func dimensions(a template.Alarm) map[string]string {
	dims := make(map[string]string, len(a.Dimensions))
	for _, d := range a.Dimensions {
		dims[d.Name] = d.Value
	}
	return dims
}

// collect reads the service metric of an alarm now into Metrics; the
// functions' own metrics arrive by themselves.
func (e *Evaluator) collect(ctx context.Context, a template.Alarm, now time.Time) error {
	dims := dimensions(a)
	put := func(v float64) { e.Metrics.Put(a.Namespace, a.MetricName, dims, now, v) }
	switch a.Namespace {
	case "AWS/SQS":
		url, known := e.QueueURLs[dims["QueueName"]]
		if !known {
			return nil // no such queue: no data, as on AWS
		}
		attr := map[string]sqstypes.QueueAttributeName{
			"ApproximateNumberOfMessagesVisible":    sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			"ApproximateNumberOfMessagesNotVisible": sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			"ApproximateNumberOfMessagesDelayed":    sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		}[a.MetricName]
		if attr != "" {
			out, err := e.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
				QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{attr},
			})
			if err != nil {
				return err
			}
			n, err := strconv.Atoi(out.Attributes[string(attr)])
			if err != nil {
				return fmt.Errorf("%s: %w", attr, err)
			}
			put(float64(n))
			return nil
		}
		if a.MetricName == "ApproximateAgeOfOldestMessage" && e.Ages != nil {
			if s, ok := e.Ages(url); ok {
				put(s)
			}
		}
	case "AWS/States":
		return e.collectFailedExecutions(ctx, a, dims["StateMachineArn"])
	}
	return nil
}

// collectFailedExecutions records 1 at the stop time of every failed
// execution not recorded yet: the Sum over a period is the number that
// failed in it, as CloudWatch's ExecutionsFailed.
func (e *Evaluator) collectFailedExecutions(ctx context.Context, a template.Alarm, machine string) error {
	if e.StepFunctions == nil {
		return nil
	}
	seen := e.failed[machine]
	if seen == nil {
		seen = map[string]bool{}
		e.failed[machine] = seen
	}
	p := sfn.NewListExecutionsPaginator(e.StepFunctions, &sfn.ListExecutionsInput{
		StateMachineArn: aws.String(machine), StatusFilter: sfntypes.ExecutionStatusFailed,
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, x := range page.Executions {
			arn := aws.ToString(x.ExecutionArn)
			if seen[arn] || x.StopDate == nil {
				continue
			}
			seen[arn] = true
			e.Metrics.Put(a.Namespace, a.MetricName, map[string]string{"StateMachineArn": machine}, *x.StopDate, 1)
		}
	}
	return nil
}

func breaches(op string, v, threshold float64) bool {
	switch op {
	case "GreaterThanThreshold":
		return v > threshold
	case "GreaterThanOrEqualToThreshold":
		return v >= threshold
	case "LessThanThreshold":
		return v < threshold
	case "LessThanOrEqualToThreshold":
		return v <= threshold
	}
	return false
}

func comparisonText(op string) string {
	s := strings.TrimSuffix(op, "Threshold")
	switch s {
	case "GreaterThan":
		return "greater than"
	case "GreaterThanOrEqualTo":
		return "greater than or equal to"
	case "LessThan":
		return "less than"
	case "LessThanOrEqualTo":
		return "less than or equal to"
	}
	return op
}

func formatValue(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func (e *Evaluator) log() *slog.Logger {
	if e.Log != nil {
		return e.Log
	}
	return slog.Default()
}
