package club

import (
	"errors"
	"fmt"
)

// Sentinels shared by the domain packages. Match them with errors.Is.
var (
	// ErrNotFound: the resource does not exist or the caller may not see it.
	// The two are deliberately indistinguishable (404, never 403).
	ErrNotFound = errors.New("not found")
	// ErrClassNotFound: the class named in the request does not exist.
	ErrClassNotFound = errors.New("class not found")
	// ErrClassFull: every seat of the class is taken.
	ErrClassFull = errors.New("class is full")
	// ErrAlreadyEnrolled: the student already holds a seat in the class.
	ErrAlreadyEnrolled = errors.New("student is already enrolled in this class")
	// ErrIdempotencyKeyRequired: the request needs an Idempotency-Key and has
	// none, or a malformed one.
	ErrIdempotencyKeyRequired = errors.New("idempotency key required")
	// ErrIdempotencyKeyReused: the key was already used by the same caller for
	// a different request.
	ErrIdempotencyKeyReused = errors.New("idempotency key was already used for a different request")
	// ErrContention: a write lost too many races with concurrent writers of
	// the same items and gave up. Nothing was written; the caller may retry.
	ErrContention = errors.New("too much contention, retry later")
)

// ValidationError says which input field is invalid and why.
type ValidationError struct {
	Field  string // the field's name as the client sent it, e.g. "capacity"
	Reason string // human text, e.g. "must be between 1 and 10000"
}

func (e *ValidationError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Reason) }

// Invalid returns a *ValidationError for field.
func Invalid(field, reasonFormat string, args ...any) error {
	return &ValidationError{Field: field, Reason: fmt.Sprintf(reasonFormat, args...)}
}
