package fault

import (
	"fmt"
	"slices"
)

// Point names a place in the code where a fault can be injected. The names
// are part of the reliability suite's contract and of docs/reliability.md:
// never rename one.
type Point string

// The fault points. Each says where, exactly, it sits.
const (
	// APIBeforeCommit: the API has validated an enrollment request and not
	// yet started its transaction. Nothing is written.
	APIBeforeCommit Point = "api.before_commit"
	// APIAfterCommit: the enrollment transaction (seat, enrollment, outbox
	// row, idempotency record) committed; the HTTP answer is not sent yet.
	APIAfterCommit Point = "api.after_commit"
	// RelayBeforePublish: the relay (or the sweeper, which relays through the
	// same code) holds outbox rows and has not published them.
	RelayBeforePublish Point = "relay.before_publish"
	// RelayAfterPublish: the broker confirmed the publish; the rows are not
	// marked published (the uncertain publish confirm).
	RelayAfterPublish Point = "relay.after_publish"
	// RelayAfterMark: the rows are published and marked; the relay has not
	// reported success to its event source.
	RelayAfterMark Point = "relay.after_mark"
	// ConsumerBeforeCommit: an SQS consumer received a message and has not
	// run its handler (nothing committed).
	ConsumerBeforeCommit Point = "consumer.before_commit"
	// ConsumerAfterCommit: the handler committed its effect (and its record
	// of the event: an inbox row, or the roster entry's own); the message is
	// not acknowledged yet.
	ConsumerAfterCommit Point = "consumer.after_commit"
	// NotifierAfterSend: the mail provider accepted the message; the
	// notification is not recorded as sent.
	NotifierAfterSend Point = "notifier.after_send"
	// SagaAfterRefundAccepted: the payment provider accepted a refund; the
	// purchase does not record it yet (the saga's refund step, keyed by the
	// purchase id).
	SagaAfterRefundAccepted Point = "saga.after_refund_accepted"
	// ExporterBeforePut: the exporter has marked the operation running and
	// built the file; it has not written it to the exports bucket (keyed by
	// the operation id).
	ExporterBeforePut Point = "exporter.before_put"
)

// Points lists every fault point, in the order of the enrollment path.
var Points = []Point{
	APIBeforeCommit, APIAfterCommit,
	RelayBeforePublish, RelayAfterPublish, RelayAfterMark,
	ConsumerBeforeCommit, ConsumerAfterCommit,
	NotifierAfterSend,
	SagaAfterRefundAccepted,
	ExporterBeforePut,
}

// Known reports whether p is one of Points.
func Known(p Point) bool { return slices.Contains(Points, p) }

// ExitCode is the exit status of a process crashed by a fault.
const ExitCode = 86

// Error is the error Inject returns for the error action. Callers do not
// handle it specially: it travels their ordinary path for an unexpected,
// transient failure.
type Error struct {
	Point Point
	Key   string
}

func (e *Error) Error() string {
	return fmt.Sprintf("fault injected at %s (key %q)", e.Point, e.Key)
}
