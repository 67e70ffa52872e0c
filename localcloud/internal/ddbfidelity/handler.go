package ddbfidelity

import (
	"bytes"
	"io"
	"net/http"
	"strings"
)

const targetPrefix = "DynamoDB_20120810."

// Handler is the fidelity layer: an http.Handler for every DynamoDB request
// (X-Amz-Target: DynamoDB_20120810.*), in front of next (the stream
// recorder). Its own reads (table descriptions, an item's old image) go to
// engine directly.
type Handler struct {
	next    http.Handler
	engine  http.Handler
	profile Profile
	tables  *tables
	stats   *counters
	numbers *decimals
}

// New returns the fidelity layer in front of next, reading from engine, for
// an engine that behaves as profile says.
func New(next, engine http.Handler, profile Profile) *Handler {
	return &Handler{next: next, engine: engine, profile: profile, tables: newTables(), stats: newCounters(), numbers: newDecimals()}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), targetPrefix)
	c := &call{h: h, w: w, r: r, op: op, body: body}
	c.serve()
}

// forward hands body to next and returns what it answered.
func (h *Handler) forward(r *http.Request, body []byte) *answer {
	req := r.Clone(r.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.Header.Del("Content-Length")
	rec := newRecorder()
	h.next.ServeHTTP(rec, req)
	return rec.answer()
}
