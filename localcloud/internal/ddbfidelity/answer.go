package ddbfidelity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http"
	"strconv"
)

// answer is what the engine (through the recorder) answered.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a *answer) ok() bool { return a.status/100 == 2 }

// errorType is the short name of an error answer's __type ("" when none).
func (a *answer) errorType() string {
	var e struct {
		Type string `json:"__type"`
	}
	_ = json.Unmarshal(a.body, &e)
	if i := bytes.LastIndexByte([]byte(e.Type), '#'); i >= 0 {
		return e.Type[i+1:]
	}
	return e.Type
}

// write sends the answer, with the length and CRC32 of its body.
func (a *answer) write(w http.ResponseWriter) {
	for k, vs := range a.header {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(a.body)), 10))
	status := a.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(a.body)
}

// withBody returns a copy of a answering body instead.
func (a *answer) withBody(body []byte) *answer {
	return &answer{status: a.status, header: a.header.Clone(), body: body}
}

// recorder is an http.ResponseWriter that keeps what is written to it.
type recorder struct {
	status int
	header http.Header
	buf    bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.buf.Write(p)
}

func (r *recorder) answer() *answer {
	st := r.status
	if st == 0 {
		st = http.StatusOK
	}
	return &answer{status: st, header: r.header, body: r.buf.Bytes()}
}

// errorAnswer is a DynamoDB error answer.
func errorAnswer(status int, typ, msg string) *answer {
	b, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.dynamodb.v20120810#" + typ, "message": msg})
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	return &answer{status: status, header: h, body: b}
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	errorAnswer(status, typ, msg).write(w)
}

// validation is AWS's ValidationException with msg.
func validation(msg string) *answer {
	return errorAnswer(http.StatusBadRequest, "ValidationException", msg)
}

// refusal is the local cloud's refusal of feature: a ValidationException
// whose message names the feature, says why, and says it is the local
// cloud's.
func refusal(feature, why string) *answer {
	return validation(fmt.Sprintf("the local cloud refuses %s: %s (AWS would accept the request; the local cloud cannot carry it out as AWS would and does not pretend to)", feature, why))
}

func jsonHeader() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	return h
}
