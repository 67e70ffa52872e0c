// Package cwmetric reads the latest value of CloudWatch metrics: the age of
// the oldest message of an SQS queue (AWS/SQS ApproximateAgeOfOldestMessage)
// and the iterator age of a stream consumer (AWS/Lambda IteratorAge).
//
// [Latest] asks for all its queries in as few GetMetricData calls as the API
// allows and returns, per query, the newest datapoint inside the window, or
// nothing when the metric has no datapoint there: an emulator that serves no
// service metrics (kumo) or a queue with no traffic for hours. The caller
// decides what "no datapoint" means.
//
// CloudWatch metrics are published about once a minute and arrive with a
// delay of a few minutes, so a value read here describes the recent past,
// not this instant. It is safe for concurrent use; it only reads.
package cwmetric
