// Command notifier sends the enrollment confirmation e-mail (SPEC §1.11,
// §7.1). Its event source is the notifications queue, which the events topic
// fills with enrollment.created envelopes (raw delivery). For each one it
// counts an attempt on the enrollment, resolves the student's address under
// the address policy (ADDRESS_POLICY; events carry no address; under the
// current policy the profiles of a whole batch are read in one request),
// calls the mail provider with an idempotency key derived from the event id,
// and records the notification's business status on the enrollment: sent,
// unknown (no answer came back: the retry with the same key resolves it) or
// failed. Each of these writes is one conditional update, without a read.
//
// Contracts:
//
//   - Idempotency: at most one mail per event. The provider key
//     "notify-<event_id>" is never regenerated and the mail's text depends
//     on the event only, so duplicate deliveries, retries after a lost
//     answer and replays from the dead-letter queue all ask for the same
//     message; a delivery after the status is sent does nothing.
//   - Honest status: "unknown" is never turned into "failed" by a timeout,
//     and a 409 for the event's own key means the provider holds its
//     message (recorded as sent).
//   - Failures: malformed or unsupported events, a missing address, a
//     rejected message and an unknown enrollment go to the dead-letter queue
//     with a reason (dlq_code no_address, mail_rejected, …); transient ones
//     come back with exponential backoff (1 s to 30 s), or after the
//     provider's Retry-After for a 429.
//   - Ordering and concurrency: the messages of a batch are independent and
//     handled concurrently; nothing depends on their order.
//
// Environment: the template's globals (CLUB_TABLE, OUTBOX_TABLE,
// ADDRESS_POLICY, …), QUEUE_URL, DLQ_URL, MAIL_API_URL, and optionally
// MAX_RECEIVE_COUNT (the queue's redrive maxReceiveCount), MAIL_TIMEOUT and
// AWS_LAMBDA_LOG_LEVEL.
package main
