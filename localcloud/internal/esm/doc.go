// Package esm runs Lambda event source mappings for the local cloud: it polls
// SQS queues and DynamoDB streams and invokes functions through an
// invoke.Invoker with the semantics of the AWS Lambda event source mapping
// service. The emulator stores mappings created through the Lambda API but
// never polls them; the pollers here do the polling, taking their settings
// from the template (through the config structs SQSMapping and StreamMapping)
// because the emulator drops most of them.
//
// # SQS mappings
//
// An SQSPoller receives with long polling and invokes the function with the
// Lambda SQS event (events.SQSEvent). Delivery is at least once:
//
//   - A successful invocation deletes the whole batch. With
//     ReportBatchItemFailures only the messages not reported as failed are
//     deleted; an invalid report (bad JSON, an empty or unknown
//     itemIdentifier) fails the whole batch, as on AWS.
//   - A function error deletes nothing: the messages come back after the
//     queue's visibility timeout and the queue's redrive policy moves them to
//     the dead-letter queue after maxReceiveCount receives.
//   - At most MaximumConcurrency invocations are in flight per mapping. One
//     poller runs at idle; another is added (up to the limit) whenever a
//     poller receives a full batch, and extra pollers retire after an empty
//     receive.
//
// Latency: a long poll is woken by a new message, so a message sent to an
// idle queue reaches the function within milliseconds. The emulator does not
// wake a long poll for a message whose visibility timeout or delay expires,
// so pollers wait at most one second per receive: such messages are picked up
// within about a second. The batching window is likewise honoured to the
// second (SQS long polls and the AWS setting are whole seconds).
//
// # DynamoDB stream mappings
//
// A StreamPoller reads one stream (one shard) from a ddbstream.Log in order.
// It polls as Lambda does, four times a second (StreamPollInterval): a poll
// that finds nothing waits for a write and then for the next poll, so a
// steady stream of writes reaches the function in batches of what arrived
// since the last poll; only a full batch is followed by the next poll at
// once. Records that match none of the filter patterns are skipped before
// batching and never reach the function. Exactly one batch is in flight at a time:
// the next batch starts only after the previous one is finished, so records
// are delivered in sequence order (a retried record may be delivered again,
// never out of order). A failing batch is retried with exponential backoff,
// optionally bisected, and, when MaximumRetryAttempts or MaximumRecordAge is
// exhausted, its metadata (never its records) is sent to the on-failure
// destination before the poller moves on. Retries back off exponentially:
// 50 ms after the first consecutive failure, doubling, at most 2 s, reset by
// a success; a bisection waits the same way, so a failing function never
// spins the poller. Invokes that could not be made at all (the function's
// process is down) are retried the same way without using up retry
// attempts, as on AWS, until MaximumRecordAge. Checkpoint reports the highest
// sequence number up to which every record is finished (delivered, filtered
// out or discarded); Log.Latest minus Checkpoint is the stream lag.
//
// The filter language is the EventBridge event pattern subset that Lambda
// event filtering supports (see filter.go).
//
// # Concurrency
//
// Each poller's Run must be called at most once; it blocks until its context
// is cancelled and returns nil then. Stats and Checkpoint are safe to call
// from any goroutine at any time.
package esm
