// Package projectionhandler is the Lambda handler of the functions that
// maintain a read model from enrollment events: roster and analytics. They
// differ only by their [projection.Projector]; everything else — the
// configuration, the wiring and the SQS batch handling — is here.
//
// The handler decodes the envelopes of a batch and applies them through the
// projector together: the read-model changes of the whole batch and their
// records commit in one transaction (effects on one item merged), so a
// batch of ten events is one write request instead of ten. The records are
// analytics' inbox rows, and for the roster the entries themselves, which
// record the events applied to them (projection.RecordedOnEntry): a roster
// batch writes one item per entry and no inbox row. When that
// transaction cannot commit — an event of the batch was applied before, or
// a transient failure — each event is applied on its own (a transaction,
// or for the roster one conditional write of its entry), so every message
// still gets its own result. The consumer (package
// sqsconsumer, ProcessBatch) maps the results: a repeated event
// (inbox.ErrDuplicate) is acknowledged without effect; a malformed or
// unsupported event, or an event id seen before with other content
// (inbox.ErrContractConflict; for the roster: on the same entry, or another
// event adding or removing an entry already added or removed by one), goes
// to the dead-letter queue with its reason;
// any other failure is retried with a backoff.
//
// A Handler is safe for concurrent use.
package projectionhandler
