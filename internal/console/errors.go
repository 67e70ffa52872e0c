package console

import (
	"encoding/json"
	"errors"
	"net/http"
)

// Error is an answer other than success, with its HTTP status and a stable
// code. A Source returns one to choose the answer; any other error is a
// source_failed (502): the stack could not be read.
type Error struct {
	Status int
	Code   string
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// The codes the console answers with.
const (
	CodeNotFound         = "not_found"
	CodeInvalidRequest   = "invalid_request"
	CodeRefused          = "refused"
	CodeReadOnly         = "read_only"
	CodeTokenInvalid     = "token_invalid"
	CodeHostNotAllowed   = "host_not_allowed"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeConflict         = "conflict"
	CodeSourceFailed     = "source_failed"
)

// NotFound, Invalid and Refused make the Errors a Source returns.
func NotFound(err error) error {
	return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Err: err}
}
func Invalid(err error) error {
	return &Error{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Err: err}
}
func Refused(err error) error {
	return &Error{Status: http.StatusConflict, Code: CodeRefused, Err: err}
}

func writeError(w http.ResponseWriter, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Status: http.StatusBadGateway, Code: CodeSourceFailed, Err: err}
	}
	writeJSON(w, e.Status, map[string]any{"error": map[string]string{"code": e.Code, "message": e.Err.Error()}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
