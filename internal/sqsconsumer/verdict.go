package sqsconsumer

import (
	"errors"
	"fmt"
	"time"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/inbox"
)

// Action is what the consumer does with a message once its handler returned.
type Action int

const (
	// Ack: the message is done (handled, or a duplicate delivery). It is
	// left out of batchItemFailures, so the event source mapping deletes it.
	Ack Action = iota
	// Retry: a transient failure. The message is reported in
	// batchItemFailures and comes back after a delay.
	Retry
	// DeadLetter: a permanent failure. The consumer sends the message to its
	// dead-letter queue with the reason, then acknowledges it.
	DeadLetter
)

func (a Action) String() string {
	switch a {
	case Ack:
		return "ack"
	case Retry:
		return "retry"
	case DeadLetter:
		return "dead_letter"
	default:
		return fmt.Sprintf("Action(%d)", int(a))
	}
}

// Stable dead-letter codes (the dlq_code attribute) of the default
// classification. Handlers add their own with Permanent.
const (
	CodeMalformedEvent     = "malformed_event"
	CodeUnknownEventType   = "unknown_event_type"
	CodeUnsupportedVersion = "unsupported_version"
	CodeContractConflict   = "contract_conflict"
	// CodeRetriesExhausted marks a message whose last allowed delivery
	// (Config.MaxReceiveCount) failed transiently.
	CodeRetriesExhausted = "retries_exhausted"
	// CodeRetryDeadlinePassed marks a message whose retry budget in time
	// (Config.RetryBudget) ended with a transient failure.
	CodeRetryDeadlinePassed = "retry_deadline_passed"
)

// Verdict is the classification of a handler's result.
type Verdict struct {
	Action Action
	// Code is the dlq_code of a DeadLetter verdict (stable snake_case).
	Code string
	// RetryAfter is the delay a Retry verdict asked for; 0 means the
	// consumer's exponential backoff.
	RetryAfter time.Duration
	// Park is true for a Retry that waits in the parking queue (Park).
	Park bool
	// Duplicate is true for an Ack of a repeated delivery
	// (inbox.ErrDuplicate): normal, but worth counting.
	Duplicate bool
}

// PermanentError marks a failure that retrying cannot fix; see Permanent.
type PermanentError struct {
	Code string
	Err  error
}

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent marks err as permanent: the message goes to the dead-letter queue
// with code as its dlq_code and err's text as its dlq_reason, instead of being
// retried. code must be stable snake_case (dashboards and runbooks key on it).
func Permanent(code string, err error) error {
	if err == nil {
		err = errors.New(code)
	}
	return &PermanentError{Code: code, Err: err}
}

// RetryAfterError is a transient failure that asks for a specific delay; see
// RetryAfter.
type RetryAfterError struct {
	Delay time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string { return e.Err.Error() }
func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter marks err as transient and asks for the message to come back
// after d (a provider's Retry-After) instead of after the exponential
// backoff. The delay is still capped by Config.BackoffCap, so a recovered
// provider is retried soon.
func RetryAfter(d time.Duration, err error) error {
	if err == nil {
		err = errors.New("retry later")
	}
	return &RetryAfterError{Delay: d, Err: err}
}

// TaggedError is a failure whose message's next copy carries an
// attribute; see Tag.
type TaggedError struct {
	Name, Value string
	Err         error
}

func (e *TaggedError) Error() string { return e.Err.Error() }
func (e *TaggedError) Unwrap() error { return e.Err }

// Tag asks for the copy that carries a retry of the message (with
// Config.RetryBudget), or its parked copy (Park), to carry the string
// attribute name=value, beside the retry's own attributes. Like any
// attribute of a message, the tag stays on the later copies. It does not
// change the classification of err, which may be any failure (RetryAfter,
// Park, Permanent, …); a retry without a copy (no retry budget, or the copy
// could not be sent, so the received message comes back after its
// visibility timeout) cannot carry it.
func Tag(err error, name, value string) error {
	if err == nil {
		return nil
	}
	return &TaggedError{Name: name, Value: value, Err: err}
}

// Classify is the consumer's classification of a handler's error, applied
// once per message:
//
//   - nil → Ack; inbox.ErrDuplicate → Ack (Duplicate);
//   - a *PermanentError (see Permanent) → DeadLetter with its code;
//   - a *RetryAfterError (see RetryAfter) → Retry after its delay;
//   - a *ParkError (see Park) → Retry in the parking queue;
//   - events.ErrUnsupportedVersion, events.ErrUnknownType,
//     events.ErrMalformed, inbox.ErrContractConflict → DeadLetter with
//     CodeUnsupportedVersion, CodeUnknownEventType, CodeMalformedEvent,
//     CodeContractConflict: the same bytes fail the same way every time;
//   - anything else → Retry with backoff (throttling, 5xx, timeouts,
//     contention, a cancelled context).
//
// An explicit Permanent or RetryAfter wins over the sentinels it wraps.
func Classify(err error) Verdict {
	if err == nil {
		return Verdict{Action: Ack}
	}
	if errors.Is(err, inbox.ErrDuplicate) {
		return Verdict{Action: Ack, Duplicate: true}
	}
	if pe, ok := errors.AsType[*PermanentError](err); ok {
		return Verdict{Action: DeadLetter, Code: pe.Code}
	}
	if ra, ok := errors.AsType[*RetryAfterError](err); ok {
		return Verdict{Action: Retry, RetryAfter: max(ra.Delay, 0)}
	}
	if _, ok := errors.AsType[*ParkError](err); ok {
		return Verdict{Action: Retry, Park: true}
	}
	for _, c := range sentinelCodes {
		if errors.Is(err, c.err) {
			return Verdict{Action: DeadLetter, Code: c.code}
		}
	}
	return Verdict{Action: Retry}
}

// sentinelCodes maps the permanent sentinels to their codes, most specific
// first.
var sentinelCodes = []struct {
	err  error
	code string
}{
	{events.ErrUnsupportedVersion, CodeUnsupportedVersion},
	{events.ErrUnknownType, CodeUnknownEventType},
	{events.ErrMalformed, CodeMalformedEvent},
	{inbox.ErrContractConflict, CodeContractConflict},
}
