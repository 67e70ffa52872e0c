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
// Parity: alarms are evaluated as CloudWatch evaluates them, every
// Interval: the Statistic (Maximum, Minimum, Sum, Average, SampleCount) of
// each of the last EvaluationPeriods windows of Period, ALARM when
// DatapointsToAlarm of them breach, a window without data treated by
// TreatMissingData (CloudWatch's default "missing" when unset). The
// datapoints are kept in [Metrics]:
//   - a custom namespace (the functions' own, such as Club
//     PendingNotificationAge): the Embedded Metric Format lines the
//     functions write, which the local cloud hands to [Metrics.PutEMF] as
//     CloudWatch Logs would extract them;
//   - AWS/SQS ApproximateNumberOfMessagesVisible, NotVisible and Delayed
//     (GetQueueAttributes) and ApproximateAgeOfOldestMessage (package
//     sqsage), read at each evaluation; an age the local cloud does not know
//     (messages SNS delivered that nobody received yet, at first sight) is no
//     datapoint, never 0 s;
//   - AWS/States ExecutionsFailed: 1 at the stop time of each failed
//     execution (ListExecutions).
//
// An alarm on any other AWS metric, metric math or a percentile could never
// fire locally: [Evaluator.Create] refuses it, named ([ErrNotEvaluated]),
// rather than leave it in OK. Windows end at the evaluation (CloudWatch
// aligns them to the period and evaluates about a minute late): locally an
// alarm fires and clears up to a Period sooner than on AWS, never later.
package alarms
