// Package sqsage gives the local cloud what CloudWatch's
// ApproximateAgeOfOldestMessage gives an operator on AWS: the age of a
// queue's oldest message, read without receiving anything.
//
// kumo keeps every message's SentTimestamp but shows it only to a receive,
// and a receive is not free: it hides the message from its consumer for the
// visibility timeout and counts one more receive toward the queue's
// maxReceiveCount, so a tool that peeks a live queue to measure its age can
// push a waiting message into the dead-letter queue without a reason.
// [Tracker] sits in front of kumo on the local cloud's endpoint and watches
// the SQS calls go by: a send (SendMessage, SendMessageBatch) adds a message
// with the time it was accepted, a receive learns the receipt handles of
// the messages it returns (and their SentTimestamp), a delete
// (DeleteMessage, DeleteMessageBatch, PurgeQueue, DeleteQueue) removes them.
// [Tracker.Oldest] is then the oldest message the queue still holds; the
// local cloud serves it at GET /_club/queues/age?queue=URL.
//
// Parity: like the metric, the age counts every message not deleted, in
// flight or delayed included. Two gaps, both reported rather than hidden: a
// message kumo's SNS delivers to a queue does not pass the endpoint, so it
// is learned at its first receive (with its SentTimestamp); until then
// [Age.Untracked] counts it and the age is a lower bound (Complete false).
// A message kumo moves to the dead-letter queue by the redrive policy, or
// drops at the end of its retention period, is not seen to leave; the
// tracker forgets a queue's messages when kumo reports the queue empty.
package sqsage
