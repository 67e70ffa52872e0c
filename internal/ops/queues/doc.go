// Package queues answers the operator's questions about a stack's SQS
// queues (docs/principles.md §1.4, §1.7): which queues there are and which dead-letter
// queue and work class each has ([Catalog]), how many messages each holds
// ([GetDepth]), how old the oldest one is ([AgeProber], [Peek]) and whether
// the queue drains ([MeasureDrain]).
//
// # Age of the oldest message
//
// Depth alone lies; age relates a queue to the user promise. On AWS the age
// is CloudWatch's ApproximateAgeOfOldestMessage (it includes in-flight
// messages, and is a minute or a few old). Where the endpoint has no such
// metric (kumo, and so the local cloud) the age is computed from the
// SentTimestamp of the messages themselves by a peek: receive with a
// visibility timeout, look, and restore visibility at once. A peek never
// deletes, and it leaves the queue's order alone as far as SQS defines one
// (a standard queue promises none; kumo puts the peeked messages back at the
// head, among themselves in any order). But every receive counts toward
// maxReceiveCount, which is why callers allow the peek by default only on the
// local cloud and leave it opt-in on AWS. See [Peek] for the full trade-off.
//
// # Contracts
//
// Everything here only reads, except that a peek briefly leases the messages
// it looks at and always restores them, also when its context is cancelled.
// Functions are safe for concurrent use; two concurrent peeks of one queue
// split its messages between them and each sees only its share.
package queues
