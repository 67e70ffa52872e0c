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
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/clubdev/club/internal/localcloud/template"
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
// without receiving (the local cloud's sqsage.Tracker); ok is false when
// the queue is empty.
type QueueAges func(queueURL string) (seconds float64, ok bool)

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

	state    map[string]string // alarm name → state last set
	breaches map[string]int    // alarm name → consecutive breaching evaluations
}

// Create puts every alarm, with its actions, into the emulator.
func (e *Evaluator) Create(ctx context.Context) error {
	var errs []error
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

// Evaluate evaluates every alarm once and sets the state of those whose
// state changed.
func (e *Evaluator) Evaluate(ctx context.Context) error {
	if e.state == nil {
		e.state, e.breaches = map[string]string{}, map[string]int{}
	}
	var errs []error
	for _, a := range e.Alarms {
		value, ok, err := e.value(ctx, a)
		if err != nil {
			errs = append(errs, fmt.Errorf("alarm %s: %w", a.Name, err))
			continue
		}
		next, reason := e.next(a, value, ok)
		if next == "" || next == e.state[a.Name] {
			continue
		}
		_, err = e.CloudWatch.SetAlarmState(ctx, &cloudwatch.SetAlarmStateInput{
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

// next is the state an alarm should be in, given its metric's value now
// (ok false: no data); "" leaves it as it is.
func (e *Evaluator) next(a template.Alarm, value float64, ok bool) (state, reason string) {
	if !ok {
		e.breaches[a.Name] = 0
		switch a.TreatMissingData {
		case "breaching":
			return StateAlarm, "no data, treated as breaching"
		case "ignore":
			return "", ""
		case "missing":
			return StateInsufficientData, "no data"
		default: // notBreaching, and the local default
			return StateOK, "no data, treated as not breaching"
		}
	}
	needed := max(a.DatapointsToAlarm, 0)
	if needed == 0 {
		needed = max(a.EvaluationPeriods, 1)
	}
	if breaches(a.ComparisonOperator, value, a.Threshold) {
		e.breaches[a.Name]++
		if e.breaches[a.Name] >= needed {
			return StateAlarm, fmt.Sprintf("Threshold Crossed: %s %s = %s, %s the threshold (%s)",
				a.Namespace, a.MetricName, formatValue(value), comparisonText(a.ComparisonOperator), formatValue(a.Threshold))
		}
		return "", ""
	}
	e.breaches[a.Name] = 0
	return StateOK, fmt.Sprintf("%s %s = %s, not %s the threshold (%s)",
		a.Namespace, a.MetricName, formatValue(value), comparisonText(a.ComparisonOperator), formatValue(a.Threshold))
}

// value reads the alarm's metric now; ok is false when there is no data.
func (e *Evaluator) value(ctx context.Context, a template.Alarm) (float64, bool, error) {
	if a.Namespace != "AWS/SQS" {
		return 0, false, nil
	}
	var queueName string
	for _, d := range a.Dimensions {
		if d.Name == "QueueName" {
			queueName = d.Value
		}
	}
	url, known := e.QueueURLs[queueName]
	if !known {
		return 0, false, nil
	}
	switch a.MetricName {
	case "ApproximateNumberOfMessagesVisible":
		out, err := e.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages},
		})
		if err != nil {
			return 0, false, err
		}
		n, err := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
		if err != nil {
			return 0, false, fmt.Errorf("ApproximateNumberOfMessages: %w", err)
		}
		return float64(n), true, nil
	case "ApproximateAgeOfOldestMessage":
		if e.Ages == nil {
			return 0, false, nil
		}
		s, ok := e.Ages(url)
		if !ok {
			return 0, true, nil // an empty queue's oldest message is 0 s old
		}
		return s, true, nil
	}
	return 0, false, nil
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
