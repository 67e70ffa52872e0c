// Package alarms evaluates the template's CloudWatch alarms on the local
// cloud, so that an alarm that would fire on AWS fires locally too and its
// notification reaches the same SNS topic.
//
// kumo stores alarms (PutMetricAlarm, DescribeAlarms) and, on
// SetAlarmState, publishes the CloudWatch alarm notification to the
// alarm's AlarmActions or OKActions topics, but it never evaluates an
// alarm. [Evaluator] creates every alarm of the template in kumo with its
// actions, then every Interval reads the current value of each alarm's
// metric, compares it with the threshold and, when the state changes, sets
// it with SetAlarmState: kumo then notifies the topics (the ops topic),
// with the alarm's description, which names its runbook. clubctl status
// reads the states back with DescribeAlarms, as it does on AWS.
//
// Parity: the local value is the metric now, not a statistic over Period.
// The metrics it can read are the queue metrics of namespace AWS/SQS:
// ApproximateNumberOfMessagesVisible (GetQueueAttributes) and
// ApproximateAgeOfOldestMessage (the local cloud's own record, package
// sqsage); an alarm on any other metric has no data locally and is treated
// by its TreatMissingData (notBreaching: OK). EvaluationPeriods counts
// consecutive evaluations.
package alarms
