package api

import (
	"errors"
	"net/http"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/operation"
	"github.com/clubdev/club/internal/club/purchase"
)

// The stable error codes of the API (docs/principles.md §5). Clients match on these, never
// on messages.
const (
	CodeInvalidJSON            = "invalid_json"
	CodeValidationFailed       = "validation_failed"
	CodeIdempotencyKeyRequired = "idempotency_key_required"
	CodeUnauthorized           = "unauthorized"
	CodeForbidden              = "forbidden"
	CodeNotFound               = "not_found"
	CodeClassNotFound          = "class_not_found"
	CodeRouteNotFound          = "route_not_found"
	CodeMethodNotAllowed       = "method_not_allowed"
	CodeClassFull              = "class_full"
	CodeAlreadyEnrolled        = "already_enrolled"
	CodePayloadTooLarge        = "payload_too_large"
	CodeIdempotencyKeyReused   = "idempotency_key_reused"
	CodeInternal               = "internal"
	CodeContention             = "contention"
	CodeIntensiveNotFound      = "intensive_not_found"
	CodeIntensiveFull          = "intensive_full"
	CodePaymentNotFound        = "payment_not_found"
	CodeInvalidSignature       = "invalid_signature"
	CodeInvalidWebhook         = "invalid_webhook"
	CodeOperationNotFound      = "operation_not_found"
	// CodeWebhookSecretUnavailable: the function could not read the payment
	// provider's webhook secret (see UnavailableError).
	CodeWebhookSecretUnavailable = "webhook_secret_unavailable"
)

// httpError is a failure as the client sees it: a status, a stable code and a
// human message. Edge failures (routing, authentication, body) are created as
// one directly; domain errors become one in classify.
type httpError struct {
	status  int
	code    string
	message string
	field   string // for validation_failed: the offending field
	// retryAfter, in seconds, is sent as Retry-After when positive.
	retryAfter int
	// allow, for method_not_allowed, is sent as the Allow header.
	allow string
	// cause is the error classified, for the log; never shown to clients.
	cause error
}

func (e *httpError) Error() string {
	if e.cause != nil {
		return e.code + ": " + e.cause.Error()
	}
	return e.code + ": " + e.message
}

func (e *httpError) Unwrap() error { return e.cause }

func invalidJSON(message string) *httpError {
	return &httpError{status: http.StatusBadRequest, code: CodeInvalidJSON, message: message}
}

func invalidField(field, reason string) *httpError {
	return &httpError{status: http.StatusBadRequest, code: CodeValidationFailed, field: field, message: field + ": " + reason}
}

// UnavailableError is a dependency the function could not set up, such as a
// secret it could not read: the routes that need it, and /healthz, answer
// 503 with Code and Message. Message names what to fix (a parameter name),
// never a secret's value.
type UnavailableError struct {
	Code    string
	Message string
}

func (e *UnavailableError) Error() string { return e.Code + ": " + e.Message }

// unavailableRetryAfter is the Retry-After of a 503 for a missing dependency:
// the function looks for it again at most once a minute.
const unavailableRetryAfter = 60

// classify maps an error to what the client gets. It is the only place that
// knows the domain's error vocabulary (package club); anything it does not
// recognise is a bug or an infrastructure failure: 500, logged with its text.
func classify(err error) *httpError {
	if he, ok := errors.AsType[*httpError](err); ok {
		return he
	}
	if ue, ok := errors.AsType[*UnavailableError](err); ok {
		return &httpError{status: http.StatusServiceUnavailable, code: ue.Code, message: ue.Message, retryAfter: unavailableRetryAfter, cause: err}
	}
	if ve, ok := errors.AsType[*club.ValidationError](err); ok {
		he := invalidField(ve.Field, ve.Reason)
		he.cause = err
		return he
	}
	for _, m := range domainErrors {
		if errors.Is(err, m.sentinel) {
			return &httpError{status: m.status, code: m.code, message: m.message, retryAfter: m.retryAfter, cause: err}
		}
	}
	return &httpError{status: http.StatusInternalServerError, code: CodeInternal, message: "internal error; it has been logged", cause: err}
}

// domainErrors lists the sentinels of packages club, purchase and operation
// in the order they are checked (a wrapped error can match only one in
// practice, except the not-found errors, which are ordered most specific
// first).
var domainErrors = []struct {
	sentinel   error
	status     int
	code       string
	message    string
	retryAfter int
}{
	{club.ErrIdempotencyKeyRequired, http.StatusBadRequest, CodeIdempotencyKeyRequired,
		"the Idempotency-Key header is required: 8 to 128 visible ASCII characters", 0},
	{club.ErrIdempotencyKeyReused, http.StatusUnprocessableEntity, CodeIdempotencyKeyReused,
		"this Idempotency-Key was already used for a different request", 0},
	{club.ErrClassNotFound, http.StatusNotFound, CodeClassNotFound, "no such class", 0},
	// The purchase and operation domains' not-found errors match
	// club.ErrNotFound too: they come first, so the client learns which
	// thing is missing.
	{purchase.ErrIntensiveNotFound, http.StatusNotFound, CodeIntensiveNotFound, "no such intensive", 0},
	{purchase.ErrUnknownPayment, http.StatusNotFound, CodePaymentNotFound, "the event names no payment of ours", 0},
	{operation.ErrNotFound, http.StatusNotFound, CodeOperationNotFound, "no such operation", 0},
	{club.ErrNotFound, http.StatusNotFound, CodeNotFound, "not found", 0},
	{purchase.ErrIntensiveFull, http.StatusConflict, CodeIntensiveFull,
		"every seat of this intensive is taken or held; a held seat comes back if its hold expires", 0},
	{purchase.ErrWebhookUnauthenticated, http.StatusUnauthorized, CodeInvalidSignature,
		"the X-Sandbox-Signature header is missing, wrong or too old", 0},
	{purchase.ErrWebhookMalformed, http.StatusBadRequest, CodeInvalidWebhook, "the body is not a payment event", 0},
	{club.ErrClassFull, http.StatusConflict, CodeClassFull, "every seat of this class is taken", 0},
	{club.ErrAlreadyEnrolled, http.StatusConflict, CodeAlreadyEnrolled, "you already hold a seat in this class", 0},
	// Too many concurrent writers of the same items (DynamoDB cancelled the
	// transaction with TransactionConflict again and again): nothing was
	// written and the same request will most likely succeed a moment later.
	// 429, not 503: the service is healthy, the resource is busy, and a race
	// of clients is input, which must never produce a 5xx.
	{club.ErrContention, http.StatusTooManyRequests, CodeContention, "too many concurrent requests for this resource; retry shortly", 1},
}
