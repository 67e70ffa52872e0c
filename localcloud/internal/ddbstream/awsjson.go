package ddbstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Wire constants of the AWS JSON 1.0 protocol as DynamoDB and DynamoDB
// Streams speak it.
const (
	targetDynamoDB    = "DynamoDB_20120810."
	targetStreams     = "DynamoDBStreams_20120810."
	contentTypeJSON10 = "application/x-amz-json-1.0"
	errorTypePrefix   = "com.amazonaws.dynamodb.v20120810#"
	headerCRC32       = "X-Amz-Crc32"
	// maxRequestBytes bounds a request body; the largest DynamoDB request
	// (BatchWriteItem, TransactWriteItems) is 16 MB.
	maxRequestBytes = 32 << 20
)

// apiError is an error answered to the client in the AWS JSON 1.0 shape
// {"__type": "...#Code", "message": "..."}.
type apiError struct {
	Code    string
	Message string
	Status  int
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func validationError(format string, args ...any) *apiError {
	return &apiError{Code: "ValidationException", Message: fmt.Sprintf(format, args...), Status: http.StatusBadRequest}
}

func notFoundError(format string, args ...any) *apiError {
	return &apiError{Code: "ResourceNotFoundException", Message: fmt.Sprintf(format, args...), Status: http.StatusBadRequest}
}

// errorBody renders err as an AWS JSON 1.0 error document. Errors that are
// not an *apiError are the local cloud's own failures: InternalServerError,
// which the SDKs retry.
func errorBody(err error) (status int, body []byte) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{Code: "InternalServerError", Message: err.Error(), Status: http.StatusInternalServerError}
	}
	body, _ = json.Marshal(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{errorTypePrefix + ae.Code, ae.Message}) // a struct of strings always marshals
	return ae.Status, body
}

// writeBody writes a complete JSON 1.0 response. The CRC32 header is what
// the DynamoDB SDKs check the body against.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentTypeJSON10)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set(headerCRC32, crc32Of(body))
	w.WriteHeader(status)
	_, _ = w.Write(body) // the client went away; nothing left to tell it
}

func writeError(w http.ResponseWriter, err error) {
	status, body := errorBody(err)
	writeBody(w, status, body)
}

func crc32Of(body []byte) string {
	return strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)
}

// readBody reads a request body whole, bounded by maxRequestBytes.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	// Sized from Content-Length when the client sent one: every write
	// passes here, and io.ReadAll's growing copies were most of what the
	// recorder allocated to read it.
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= maxRequestBytes {
		buf.Grow(int(n) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(r.Body, maxRequestBytes+1)); err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	body := buf.Bytes()
	if len(body) > maxRequestBytes {
		return nil, validationError("request body exceeds %d bytes", maxRequestBytes)
	}
	return body, nil
}

// response is a complete HTTP answer held in memory: what the emulator
// answered, possibly patched before it goes to the client. It implements
// http.ResponseWriter so that the next handler can write into it.
type response struct {
	header http.Header
	status int
	body   bytes.Buffer
}

var _ http.ResponseWriter = (*response)(nil)

func newResponse() *response { return &response{header: http.Header{}} }

func (r *response) Header() http.Header { return r.header }

func (r *response) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *response) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}

// ok reports whether the emulator accepted the request.
func (r *response) ok() bool { return r.status == http.StatusOK }

// replaceBody swaps the body, keeping status and headers.
func (r *response) replaceBody(body []byte) {
	r.body.Reset()
	r.body.Write(body)
}

// writeTo sends the response to the client with a CRC32 header that matches
// the body: kumo's header does not, and the SDK then warns on every call.
func (r *response) writeTo(w http.ResponseWriter) {
	h := w.Header()
	for k, vs := range r.header {
		h[k] = vs
	}
	body := r.body.Bytes()
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set(headerCRC32, crc32Of(body))
	status := r.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(body) // the client went away; nothing left to tell it
}

// errorType returns the error code of an AWS JSON error document: the part
// of __type after '#', or "" when body is no error document.
func errorType(body []byte) string {
	var doc struct {
		Type string `json:"__type"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return ""
	}
	_, code, found := strings.Cut(doc.Type, "#")
	if !found {
		return doc.Type
	}
	return code
}
