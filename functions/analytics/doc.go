// Command analytics counts enrollments and cancellations per class (GET
// /classes/{id}/stats) from enrollment events (docs/principles.md §1.2, §1.10). Its event
// source is the analytics queue, which the events topic fills with
// enrollment.* envelopes (raw delivery).
//
// Contracts:
//
//   - Idempotency: each event is applied through the inbox: the counter
//     increment and the inbox row keyed by (analytics, event_id) commit in
//     one transaction, so a repeated delivery is acknowledged and never
//     counts twice.
//   - Failures: the same event id with different content is a contract
//     conflict, and a malformed or unsupported event is unreadable; both go
//     to the dead-letter queue with a reason, counted. Any other failure is
//     retried with exponential backoff.
//   - Ordering and concurrency: increments are sums and commute, so
//     delivery order does not matter. The events of a batch commit in one
//     transaction, their increments to one class summed into one write;
//     if it cannot commit (an event of the batch was applied before), each
//     event commits on its own.
//
// The handler, its configuration and its wiring are package
// projectionhandler's, shared with the roster function; this one differs
// only by its projector.
//
// Environment: the template's globals (CLUB_TABLE, OUTBOX_TABLE,
// INBOX_RETENTION, …), QUEUE_URL, DLQ_URL, and optionally MAX_RECEIVE_COUNT
// (the queue's redrive maxReceiveCount) and AWS_LAMBDA_LOG_LEVEL.
package main
