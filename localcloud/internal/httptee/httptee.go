// Package httptee is the response writer the local cloud's handlers put
// between a client and the engine when they must see the answer they pass
// on: the front's receipts and SDK-retry replay, the queue age tracker and
// the in-flight keeper.
package httptee

import (
	"bytes"
	"net/http"
)

// Writer passes a response through to the client's ResponseWriter and keeps
// a copy of its status and body.
type Writer struct {
	http.ResponseWriter
	// Body is the copy of what was written (its beginning only when
	// Truncated).
	Body bytes.Buffer
	// Truncated is set once the body outgrew the limit given to New.
	Truncated bool
	// Err is the first error writing to the client: the client may not
	// have the answer.
	Err error

	limit  int
	status int
}

// New returns a Writer over w that copies at most limit bytes of the body
// (0: all of it).
func New(w http.ResponseWriter, limit int) *Writer {
	return &Writer{ResponseWriter: w, limit: limit}
}

// Status is the status written, 200 if none was (as net/http answers).
func (t *Writer) Status() int {
	if t.status == 0 {
		return http.StatusOK
	}
	return t.status
}

func (t *Writer) WriteHeader(code int) {
	if t.status == 0 {
		t.status = code
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *Writer) Write(p []byte) (int, error) {
	if t.limit == 0 || t.Body.Len()+len(p) <= t.limit {
		t.Body.Write(p)
	} else {
		t.Truncated = true
	}
	n, err := t.ResponseWriter.Write(p)
	if err != nil && t.Err == nil {
		t.Err = err
	}
	return n, err
}

// Flush keeps a streamed answer streamed (the reverse proxy flushes).
func (t *Writer) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (t *Writer) Unwrap() http.ResponseWriter { return t.ResponseWriter }
