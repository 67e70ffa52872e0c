// Package projectionhandler is the Lambda handler of the functions that
// maintain a read model from enrollment events: roster and analytics. They
// differ only by their [projection.Projector]; everything else — the
// configuration, the wiring and the SQS batch handling — is here.
//
// The handler decodes the envelopes of a batch and applies them through the
// projector together. For analytics the counter changes of the whole batch
// and the events' inbox rows commit in one transaction (the increments of
// one class summed), so a batch of fifty events is one write request
// instead of fifty. The roster's entries record the events applied to them
// (projection.RecordedOnEntry), so each event is one conditional write of
// its entry, the batch's written at once, and no inbox row. When the
// transaction cannot commit — an event of the batch was applied before, or
// a transient failure — each event is applied on its own, so every message
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
