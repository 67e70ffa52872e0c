// Package inbox defines the idempotent-consumer contract (docs/principles.md §1.9, §1.10).
//
// Delivery is at least once, so every consumer sees duplicates. A consumer
// whose effect is a change to its own tables applies the effect and an inbox
// row in one transaction, unique on (consumer, event_id):
//
//   - the first delivery commits both;
//   - a repeat finds the row, changes nothing, and gets [ErrDuplicate], which
//     is the normal path: acknowledge the message;
//   - a delivery with a known event_id but different content (another
//     fingerprint, see events.Envelope.Fingerprint) gets [ErrContractConflict]:
//     a producer broke the contract; send the message to the dead-letter
//     queue with the reason and count it, do not retry.
//
// If the transaction fails, neither the effect nor the row exists and a retry
// does all of it again. Inbox rows are kept for a retention period
// ([DefaultRetention]); it must cover the longest window in which an event can
// be delivered again, including manual replays, or a replay repeats effects.
//
// A consumer whose effect lands on an item keyed by what the event is about
// may let that item carry the record instead of an inbox row, written by
// the same conditional write (the roster's entries, see
// projection.RecordedOnEntry): the same answers, one item fewer, but it sees
// only the events that land on it, and its record does not expire.
//
// The port that applies effects is declared by the consumer that uses it
// (see package projection); this package holds what all of them share.
package inbox
