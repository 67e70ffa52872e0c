// Package sqsinflight keeps the SQS messages that are in flight (received,
// not deleted) across a restart of a persistent local cloud.
//
// kumo's snapshots keep a queue's waiting and delayed messages but not the
// ones in flight: a message a consumer had received when the local cloud
// stopped would be gone after the restart, where SQS would make it visible
// again once its visibility timeout ends. Keeper sits in front of kumo's
// SQS and journals every ReceiveMessage answer (the messages and their
// visibility deadline), every visibility change and every delete, a write
// per call. Redeliver, at the next start, sends each message still in
// flight back to its queue, delayed until its deadline (at most the 15
// minutes SQS allows a delay), then empties the journal.
//
// What differs from SQS: the redelivered message has a new message id and
// receipt handle and its receive count starts again at 0 (it is a new
// message to kumo), so a message that keeps failing takes up to one
// maxReceiveCount more to reach its dead-letter queue. Consumers are
// idempotent by event id, which does not change. After a kill -9, kumo's
// last snapshot may still hold a message as waiting that was in flight
// since: it is then delivered twice, which consumers absorb.
package sqsinflight
