package status

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// AlarmDescriber is the part of *cloudwatch.Client that ReadAlarms uses. On
// the local cloud the same call reads the states its evaluator sets.
type AlarmDescriber interface {
	DescribeAlarms(ctx context.Context, in *cloudwatch.DescribeAlarmsInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error)
}

// Alarm is an alarm in state ALARM.
type Alarm struct {
	Name        string
	Description string
	Reason      string
	Since       time.Time
}

// ReadAlarms returns the alarms in state ALARM, by name. With topicARN set,
// only the alarms that notify it (the stack's ops topic) are kept: an
// account holds other stacks' alarms too.
func ReadAlarms(ctx context.Context, cw AlarmDescriber, topicARN string) ([]Alarm, error) {
	var out []Alarm
	in := &cloudwatch.DescribeAlarmsInput{StateValue: cwtypes.StateValueAlarm, AlarmTypes: []cwtypes.AlarmType{cwtypes.AlarmTypeMetricAlarm}}
	for {
		page, err := cw.DescribeAlarms(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describe alarms: %w", err)
		}
		for _, a := range page.MetricAlarms {
			if a.StateValue != cwtypes.StateValueAlarm {
				continue
			}
			if topicARN != "" && !slices.Contains(a.AlarmActions, topicARN) {
				continue
			}
			out = append(out, Alarm{
				Name: aws.ToString(a.AlarmName), Description: aws.ToString(a.AlarmDescription),
				Reason: aws.ToString(a.StateReason), Since: aws.ToTime(a.StateUpdatedTimestamp),
			})
		}
		if aws.ToString(page.NextToken) == "" {
			break
		}
		in.NextToken = page.NextToken
	}
	slices.SortFunc(out, func(a, b Alarm) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out, nil
}
