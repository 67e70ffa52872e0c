// Package relay moves outbox rows to the broker (docs/principles.md §1.14, §2): it routes
// each row by the kind of its type, publishes it with its permanent event_id,
// and then marks the row published. It holds no Lambda types; the relay
// function (outbox stream) and the outbox sweeper (schedule) are thin shells
// around [Relay] and [Sweeper].
//
// # Routing
//
// [Routes] maps an [events.Kind] to the [Publisher] that carries it: domain
// events go to the SNS topic ([SNSPublisher]); workflows start a state
// machine execution ([WorkflowStarter]: StartExecution named after the
// aggregate id, the envelope as input, so purchase.requested starts the
// purchase saga named after the purchase, and a second start of that name
// is success; [NamedBy] names other workflows, so refund.requested starts
// <purchase id>-refund); jobs go to the queue of their work class ([JobSender]:
// export.requested to the exports queue, one SendMessage per row). A row whose
// kind or type has no route fails with [ErrNoRoute] ("no route for kind …")
// and stays pending, visible in the oldest-unpublished metric, rather than
// being dropped.
//
// # Wire format
//
// The message body is the outbox row's payload, the envelope JSON, byte for
// byte on every attempt; String message attributes "type" (what the
// subscriptions' filter policies match) and "event_id" accompany it. With raw
// message delivery an SQS consumer's body is the envelope itself.
//
// # Contracts
//
//   - At least once, never silently dropped: a row is marked published only
//     after its publish succeeded. A crash between publish and mark, a retried
//     stream batch, or the sweeper racing the stream all publish the same
//     event_id again; consumers deduplicate by it.
//   - Order: [Relay.Publish] works through its rows in order and stops at the
//     first row it cannot publish or mark, returning how many rows before it
//     are done, which is what a stream consumer reports as its first failed
//     record. Publishes follow the rows' order; marks of already published
//     rows run concurrently (bounded), since nothing observes their order.
//   - Idempotency: marking an already published row is a no-op, and a row
//     that no longer exists counts as marked (only published rows ever expire).
//
// # AWS calls per row
//
// One sns:Publish and one dynamodb:UpdateItem: 2 calls. With SNS_PUBLISH_BATCH
// on, PublishBatch carries up to 10 messages, and the rows of a stream batch
// that were published are marked together (MarkAllPublished: up to 25 rows
// per BatchWriteItem, each written whole as published): 1/10 + 1/25 calls
// per row for a batch of 25 or more. The marks are not a transaction: nothing
// needs them to be atomic (a row left unmarked is republished by the
// sweeper and deduplicated by the consumers' inboxes), and a transactional
// item costs two write units where a plain write costs one. Lambda
// polls the stream four times a second, so under steady load a batch holds a
// quarter second of enrollments. A workflow row costs one
// states:StartExecution, a job row one sqs:SendMessage, plus its mark. A mark
// that finds the row already published costs one more GetItem (the store
// tells "already published" from "missing" that way).
//
// # Sweeper
//
// [Sweeper.Sweep] runs under a lease so that one sweeper works at a time; it
// lists rows still pending past a threshold, oldest first and bounded per
// run, republishes and marks them through the same [Relay], stops before its
// lease runs out, and reports the age of the oldest pending row: a promise not
// kept yet. It never deletes a row.
//
// # Wiring
//
// [Wire] builds what the relay function and the outbox sweeper share — the
// store and a Relay with the deployed routes — from a [Routing] read by
// [RoutingFromEnv], so the two route every row alike.
//
// Relay and Sweeper are safe for concurrent use.
package relay
