// Package club is the error vocabulary of the Club domain. The domain
// packages below it (class, enrollment, idempotency, inbox, outbox,
// projection, profile, lease) classify every failure a caller can act on with
// the sentinels and types declared here, once; each edge maps them to its own
// language: the HTTP API to a status and a stable error code (docs/principles.md §5), a
// queue consumer to "ack", "retry" or "dead-letter".
//
//	ErrClassNotFound          404 class_not_found
//	ErrNotFound               404 not_found (also for resources the caller may not see)
//	ErrClassFull              409 class_full
//	ErrAlreadyEnrolled        409 already_enrolled
//	ErrIdempotencyKeyRequired 400 idempotency_key_required
//	ErrIdempotencyKeyReused   422 idempotency_key_reused
//	*ValidationError          400 validation_failed (names the field)
//	ErrContention             429 contention with Retry-After (transient: the same request succeeds a moment later)
//
// The domain packages import no AWS code; adapters live in internal/store.
package club
