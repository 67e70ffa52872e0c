// Command roster maintains each class's roster (GET /classes/{id}/roster)
// from enrollment events (docs/principles.md §1.2, §1.10). Its event source is the roster
// queue, which the events topic fills with enrollment.* envelopes (raw
// delivery).
//
// Contracts:
//
//   - Idempotency: each event is applied through the inbox: the roster
//     change and the inbox row keyed by (roster, event_id) commit in one
//     transaction, so a repeated delivery is acknowledged and changes
//     nothing.
//   - Failures: the same event id with different content is a contract
//     conflict, and a malformed or unsupported event is unreadable; both go
//     to the dead-letter queue with a reason, counted. Any other failure is
//     retried with exponential backoff.
//   - Ordering and concurrency: roster changes commute (a cancellation may
//     arrive before its enrollment), so delivery order does not matter. The
//     events of a batch commit in one transaction, the changes to one item
//     merged into one write; if it cannot commit (an event of the batch was
//     applied before), each event commits on its own.
//
// The handler, its configuration and its wiring are package
// projectionhandler's, shared with the analytics function; this one differs
// only by its projector.
//
// Environment: the template's globals (CLUB_TABLE, OUTBOX_TABLE,
// INBOX_RETENTION, …), QUEUE_URL, DLQ_URL, and optionally MAX_RECEIVE_COUNT
// (the queue's redrive maxReceiveCount) and AWS_LAMBDA_LOG_LEVEL.
package main
