// Package redrive moves dead letters back to the queue they came from (docs/principles.md
// §1.18): in bounded batches, at a bounded rate, stoppable at any moment,
// without losing a message and without doubling one unless the process dies
// mid-batch.
//
// SQS has StartMessageMoveTask for this; kumo (and so the local cloud) does
// not, and it cannot strip the consumers' dead-letter attributes or stop on
// a condition of ours. [Run] does it with ReceiveMessage, SendMessageBatch
// and DeleteMessageBatch.
//
// # Why send first, then delete
//
// A message in hand exists in the DLQ (hidden) until deleted. Sending it to
// the source queue first and deleting it from the DLQ second means that a
// crash between the two leaves it in both places: a duplicate delivery,
// which the consumers absorb because their inbox is keyed by event_id (docs/principles.md
// §1.10). The other order, delete then send, turns the same crash into a
// lost message, which nothing can absorb. Duplicates are the price of never
// losing.
//
// # Interruption
//
// Cancellation (Ctrl-C) is honoured between batches only: the batch in hand
// (at most 10 messages, well under a second) always finishes its send and
// delete, so an interrupted redrive leaves each message either moved exactly
// once or visible in the DLQ, never hidden and never in both. Running it
// again continues. Only a crash of the process mid-batch can leave a copy in
// both queues; those copies reappear in the DLQ after Options.Hold.
//
// # Concurrency
//
// Run is safe to call concurrently, also on the same DLQ: SQS's visibility
// timeout gives each message to one of them at a time.
package redrive
