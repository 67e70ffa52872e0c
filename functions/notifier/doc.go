// Command notifier is the notifier function: package internal/notifier
// sends the enrollment confirmation e-mail (docs/principles.md §1.11, §7.1)
// for each enrollment.created envelope of the notifications queue; this main
// reads the environment, builds the SDK clients and wires it.
//
// Environment: the template's globals (CLUB_TABLE, OUTBOX_TABLE,
// ADDRESS_POLICY, …), QUEUE_URL, DLQ_URL, MAIL_API_URL, and optionally
// MAX_RECEIVE_COUNT (the queue's redrive maxReceiveCount), RETRY_BUDGET,
// RETRY_BACKOFF_CAP, MAIL_PROBE_INTERVAL, MAIL_TIMEOUT and
// AWS_LAMBDA_LOG_LEVEL.
package main
