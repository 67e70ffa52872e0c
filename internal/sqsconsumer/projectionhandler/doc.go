// Package projectionhandler is the Lambda handler of the functions that
// maintain a read model from enrollment events: roster and analytics. They
// differ only by their [projection.Projector]; everything else — the
// configuration, the wiring and the SQS batch handling — is here.
//
// For each message of a batch the handler decodes the envelope and applies
// it through the projector, which commits the read-model change and the
// inbox row in one transaction. The consumer (package sqsconsumer) maps the
// result: a repeated event (inbox.ErrDuplicate) is acknowledged without
// effect; a malformed or unsupported event, or an event id seen before with
// other content (inbox.ErrContractConflict), goes to the dead-letter queue
// with its reason; any other failure is retried with a backoff.
//
// Messages of a batch are applied one after another, in batch order (see
// [New]). A Handler is safe for concurrent use.
package projectionhandler
