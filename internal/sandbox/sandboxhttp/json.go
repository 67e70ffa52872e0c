package sandboxhttp

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
)

// MaxBodyBytes is the largest request body the sandboxes accept.
const MaxBodyBytes = 64 << 10

// Error is a failure with the HTTP status and stable code to answer with.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// Errorf returns an *Error with a formatted message.
func Errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid is a 400 validation_failed naming the field at fault.
func Invalid(field, format string, args ...any) *Error {
	return Errorf(http.StatusBadRequest, "validation_failed", field+": "+format, args...)
}

// errorBody is the wire shape of every error answer.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// WriteJSON answers with status and v encoded as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// The status line is already sent; a failed write means the client has
	// gone, and there is nobody left to tell.
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError answers with the error envelope.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	WriteJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: message}})
}

// HandlerFunc is a handler that reports failures by returning them.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Handler adapts h to http.Handler: an *Error is written as its status and
// code; any other error is logged and answered 500 internal_error.
func Handler(log *slog.Logger, h HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		if e, ok := errors.AsType[*Error](err); ok {
			WriteError(w, e.Status, e.Code, e.Message)
			return
		}
		log.ErrorContext(r.Context(), "sandbox handler failed", "method", r.Method, "path", r.URL.Path, "err", err)
		WriteError(w, http.StatusInternalServerError, "internal_error", "internal error")
	})
}

// DecodeJSON decodes a request body holding exactly one JSON value into v.
// Unknown fields are ignored, as a provider's API would. It fails with 413
// payload_too_large over MaxBodyBytes and 400 invalid_json otherwise.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return decodeError(err)
		}
		return Errorf(http.StatusBadRequest, "invalid_json", "unexpected data after the JSON value")
	}
	return nil
}

func decodeError(err error) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return Errorf(http.StatusRequestEntityTooLarge, "payload_too_large", "body exceeds %d bytes", MaxBodyBytes)
	}
	if errors.Is(err, io.EOF) {
		return Errorf(http.StatusBadRequest, "invalid_json", "empty body")
	}
	return Errorf(http.StatusBadRequest, "invalid_json", "%v", err)
}

// IdempotencyKeyHeader is the request header carrying the client's key.
const IdempotencyKeyHeader = "Idempotency-Key"

// ReplayedHeader marks an answer that repeats the one first given for the
// same idempotency key.
const ReplayedHeader = "Idempotent-Replayed"

// IdempotencyKey returns the request's Idempotency-Key: 1 to 255 printable
// ASCII characters, or 400 idempotency_key_required.
func IdempotencyKey(r *http.Request) (string, error) {
	key := r.Header.Get(IdempotencyKeyHeader)
	if key == "" || len(key) > 255 {
		return "", Errorf(http.StatusBadRequest, "idempotency_key_required", "header %s must hold 1 to 255 characters", IdempotencyKeyHeader)
	}
	for i := range len(key) {
		if key[i] < 0x21 || key[i] > 0x7e {
			return "", Errorf(http.StatusBadRequest, "idempotency_key_required", "header %s must be printable ASCII without spaces", IdempotencyKeyHeader)
		}
	}
	return key, nil
}

// NewID returns a random identifier such as "msg_3f9a…" (24 hex digits).
func NewID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails: crypto/rand aborts the program instead
	return prefix + "_" + hex.EncodeToString(b)
}
