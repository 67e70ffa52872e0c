// Package notifier sends the enrollment confirmation e-mail (docs/principles.md §1.11,
// §7.1). Its event source is the notifications queue, which the events topic
// fills with enrollment.created envelopes (raw delivery). For each one it
// asks its Breaker whether the provider may be called (if not, the mail is
// parked: see Pressure), counts an attempt on the enrollment, resolves the student's address under
// the address policy (ADDRESS_POLICY; events carry no address; under the
// current policy the profiles of a whole batch are read in one request),
// calls the mail provider with an idempotency key derived from the event id,
// and records the notification's business status on the enrollment: sent,
// pending (with the attempts and the last error while it is retried),
// unknown (no answer came back: the retry with the same key resolves it),
// failed, or cancelled (the enrollment was cancelled before the mail went
// out: it is not sent). Each of these writes is one conditional update,
// without a read.
//
// Contracts:
//
//   - Idempotency: at most one mail per event. The provider key
//     "notify-<event_id>" is never regenerated and the mail's text depends
//     on the event only, so duplicate deliveries, retries after a lost
//     answer and replays from the dead-letter queue all ask for the same
//     message; a delivery after the status is sent does nothing.
//   - Honest status: "unknown" is never turned into "failed" by a timeout,
//     and a 409 for the event's own key (the provider holds another payload
//     under it) is a contract conflict, never "sent": dead letter with code
//     contract_conflict and the metric NotificationContractConflicts.
//   - Failures: malformed or unsupported events, a missing address, a
//     rejected message and an unknown enrollment go to the dead-letter queue
//     with a reason (dlq_code no_address, mail_rejected, …). Transient ones
//     (5xx, 429, timeouts, an unknown result) are retried for a budget in
//     time (RETRY_BUDGET, 24 h by default), each retry a delayed copy of the
//     message (exponential backoff from 1 s to RETRY_BACKOFF_CAP, 30 s, or
//     the provider's Retry-After for a 429; see sqsconsumer's retry budget);
//     only the deadline dead-letters them (retry_deadline_passed).
//   - Pressure: while the provider is down, a Breaker in each instance
//     refuses sends at once and probes the provider once per
//     MAIL_PROBE_INTERVAL. A mail it refuses costs no write and no attempt
//     (attempts count calls to the provider) and waits in the parking
//     queue (PARKING_QUEUE_URL) instead of coming back every few seconds;
//     the mail that opened the breaker, and each failed probe's, becomes a
//     prober (attribute "prober"): it comes back when the next probe is
//     due. When a probe succeeds, or a prober is sent
//     on any instance, the batch moves the parked mail back to the queue,
//     so it all goes out within seconds of the recovery
//     (docs/architecture.md, "Waiting out a mail outage").
//     Without a parking queue, refused mail is retried with its backoff.
//   - Ordering and concurrency: the messages of a batch are independent and
//     handled concurrently; nothing depends on their order.
//   - Observability: each mail sent logs "notification sent" with its ids
//     and the provider's mail_message_id; a batch writes one metrics line
//     (NotificationLatency and NotificationsSent for its mails sent,
//     PendingNotificationAge for those it will retry: a value a mail), not a
//     line a mail, since every log line is billed as CloudWatch Logs
//     ingestion.
//
// functions/notifier is its main: it reads the environment, builds the
// store, the mail client and the SQS client, and wires [NewNotifier] and
// [NewHandler] over them.
package notifier

// FunctionName labels the notifier's log lines, metrics and queue.
const FunctionName = "notifier"
