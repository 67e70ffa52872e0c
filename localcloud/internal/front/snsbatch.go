package front

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
)

// maxPublishBatchEntries is SNS's limit of entries per PublishBatch.
const maxPublishBatchEntries = 10

// snsPublishBatch serves SNS PublishBatch (Query protocol), which kumo lacks,
// as one Publish to kumo per entry, in order: each entry's message and
// attributes reach the topic's subscribers as if published alone, and the
// answer lists each entry as Successful (with kumo's message id) or Failed
// (with kumo's error), as AWS does. The request counter sees the one
// PublishBatch the client made.
type snsPublishBatch struct{ kumo http.Handler }

type batchEntry struct {
	id     string
	fields url.Values // the entry's fields, without the entry prefix
}

func (h snsPublishBatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeSNSError(w, http.StatusBadRequest, "InvalidParameter", "cannot read the request")
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		writeSNSError(w, http.StatusBadRequest, "InvalidParameter", "malformed form body")
		return
	}
	topic := form.Get("TopicArn")
	entries := batchEntries(form)
	switch {
	case topic == "":
		writeSNSError(w, http.StatusBadRequest, "InvalidParameter", "TopicArn is required")
		return
	case len(entries) == 0:
		writeSNSError(w, http.StatusBadRequest, "EmptyBatchRequest", "The batch request doesn't contain any entries.")
		return
	case len(entries) > maxPublishBatchEntries:
		writeSNSError(w, http.StatusBadRequest, "TooManyEntriesInBatchRequest", "The batch request contains more entries than permissible.")
		return
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if seen[e.id] {
			writeSNSError(w, http.StatusBadRequest, "BatchEntryIdsNotDistinct", "Two or more batch entries in the request have the same Id.")
			return
		}
		seen[e.id] = true
	}

	var out publishBatchResponse
	for _, e := range entries {
		publish := url.Values{"Action": {"Publish"}, "Version": {form.Get("Version")}, "TopicArn": {topic}}
		for k, v := range e.fields {
			publish[k] = v
		}
		id, code, msg := h.publish(r, publish)
		if code != "" {
			out.Result.Failed = append(out.Result.Failed, batchFailed{ID: e.id, Code: code, Message: msg, SenderFault: true})
			continue
		}
		out.Result.Successful = append(out.Result.Successful, batchSuccessful{ID: e.id, MessageID: id})
	}
	out.Metadata.RequestID = newRequestID()
	w.Header().Set("Content-Type", "text/xml")
	_, _ = io.WriteString(w, xml.Header)
	_ = xml.NewEncoder(w).Encode(out)
}

// batchEntries groups PublishBatchRequestEntries.member.N.* by N, in N order.
func batchEntries(form url.Values) []batchEntry {
	const prefix = "PublishBatchRequestEntries.member."
	byN := map[int]*batchEntry{}
	for k, v := range form {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		num, field, ok := strings.Cut(rest, ".")
		n, err := strconv.Atoi(num)
		if !ok || err != nil {
			continue
		}
		e := byN[n]
		if e == nil {
			e = &batchEntry{fields: url.Values{}}
			byN[n] = e
		}
		if field == "Id" {
			e.id = strings.Join(v, "")
			continue
		}
		e.fields[field] = v
	}
	ns := make([]int, 0, len(byN))
	for n := range byN {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	out := make([]batchEntry, len(ns))
	for i, n := range ns {
		out[i] = *byN[n]
	}
	return out
}

// publish sends one Publish to kumo and returns its message id, or the
// error code and message kumo answered.
func (h snsPublishBatch) publish(r *http.Request, form url.Values) (id, code, message string) {
	body := form.Encode()
	req := httptest.NewRequestWithContext(r.Context(), http.MethodPost, "/", strings.NewReader(body))
	req.Host = r.Host
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	if auth := r.Header.Get("Authorization"); auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.kumo.ServeHTTP(rec, req)
	raw := rec.Body.Bytes()
	if rec.Code >= 300 {
		var e struct {
			Code    string `xml:"Error>Code"`
			Message string `xml:"Error>Message"`
		}
		if xml.Unmarshal(raw, &e) != nil || e.Code == "" {
			return "", "InternalError", fmt.Sprintf("publish answered HTTP %d", rec.Code)
		}
		return "", e.Code, e.Message
	}
	var ok struct {
		MessageID string `xml:"PublishResult>MessageId"`
	}
	if err := xml.Unmarshal(bytes.TrimSpace(raw), &ok); err != nil || ok.MessageID == "" {
		return "", "InternalError", "publish answered without a message id"
	}
	return ok.MessageID, "", ""
}

type publishBatchResponse struct {
	XMLName xml.Name `xml:"http://sns.amazonaws.com/doc/2010-03-31/ PublishBatchResponse"`
	Result  struct {
		Successful []batchSuccessful `xml:"Successful>member"`
		Failed     []batchFailed     `xml:"Failed>member"`
	} `xml:"PublishBatchResult"`
	Metadata struct {
		RequestID string `xml:"RequestId"`
	} `xml:"ResponseMetadata"`
}

type batchSuccessful struct {
	ID        string `xml:"Id"`
	MessageID string `xml:"MessageId"`
}

type batchFailed struct {
	ID          string `xml:"Id"`
	Code        string `xml:"Code"`
	Message     string `xml:"Message"`
	SenderFault bool   `xml:"SenderFault"`
}

func writeSNSError(w http.ResponseWriter, status int, code, message string) {
	type errorResponse struct {
		XMLName xml.Name `xml:"http://sns.amazonaws.com/doc/2010-03-31/ ErrorResponse"`
		Type    string   `xml:"Error>Type"`
		Code    string   `xml:"Error>Code"`
		Message string   `xml:"Error>Message"`
		ReqID   string   `xml:"RequestId"`
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, xml.Header)
	_ = xml.NewEncoder(w).Encode(errorResponse{Type: "Sender", Code: code, Message: message, ReqID: newRequestID()})
}

var requestSeq atomic.Uint64

// newRequestID is a unique request id for answers the front makes itself.
func newRequestID() string { return fmt.Sprintf("front-%016x", requestSeq.Add(1)) }
