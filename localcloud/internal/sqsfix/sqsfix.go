package sqsfix

import (
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clubdev/club/localcloud/internal/sqsquery"
)

// MaxMessageSize is the most a message can hold, body and attributes
// together, whatever the queue's MaximumMessageSize says.
const MaxMessageSize = 1 << 20

// Fixes corrects the SQS JSON-protocol calls and answers of the engine it
// wraps (see the package doc). One Fixes keeps its state across every
// handler it wraps. Safe for concurrent use.
type Fixes struct {
	staleCounts bool
	maxRequest  int
	now         func() time.Time

	mu     sync.Mutex
	queues map[string]*queue // by queue name

	refusedTooLarge atomic.Int64
	refusedRequests atomic.Int64
	countsCorrected atomic.Int64
}

type queue struct {
	maxSize    int           // MaximumMessageSize; 0 until read
	visibility time.Duration // VisibilityTimeout; read with maxSize
	inflight   map[string]time.Time
}

// Option configures Fixes.
type Option func(*Fixes)

// WithStaleCounts says the engine leaves a message whose visibility timeout
// ran out counted as not visible until the next receive (kumo): Fixes then
// keeps the receipt handles it saw received, and corrects the counts.
func WithStaleCounts() Option { return func(f *Fixes) { f.staleCounts = true } }

// WithMaxRequest says the engine cannot read a request body over n bytes
// (moto: about 1 MiB, so a message of just under 1 MiB, which SQS accepts,
// is lost in its parser and answered NonExistentQueue): such a request is
// refused, saying so, before it reaches the engine.
func WithMaxRequest(n int) Option { return func(f *Fixes) { f.maxRequest = n } }

// FeatureLargeRequest names what WithMaxRequest refuses.
const FeatureLargeRequest = "SQS requests over the engine's request size"

// WithClock sets the clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(f *Fixes) { f.now = now } }

// New returns Fixes with no state yet.
func New(opts ...Option) *Fixes {
	f := &Fixes{now: time.Now, queues: map[string]*queue{}}
	for _, o := range opts {
		o(f)
	}
	return f
}

// Stats says what Fixes did.
type Stats struct {
	// RefusedTooLarge counts sends refused for a message over the size
	// limit (the engine would have accepted them).
	RefusedTooLarge int64 `json:"refused_too_large"`
	// RefusedRequests counts requests refused because the engine could not
	// read them (WithMaxRequest), though SQS would have served them.
	RefusedRequests int64 `json:"refused_requests"`
	// CountsCorrected counts GetQueueAttributes answers whose message
	// counts were corrected for expired visibility timeouts.
	CountsCorrected int64 `json:"counts_corrected"`
}

// Stats returns the counters.
func (f *Fixes) Stats() Stats {
	return Stats{RefusedTooLarge: f.refusedTooLarge.Load(), RefusedRequests: f.refusedRequests.Load(), CountsCorrected: f.countsCorrected.Load()}
}

// Wrap returns a handler that serves SQS JSON-protocol calls through next
// with the corrections, and hands anything else to next untouched.
func (f *Fixes) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		action, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			writeError(w, http.StatusBadRequest, "InvalidRequest", "cannot read the request")
			return
		}
		f.serve(next, action, body, w, r)
	})
}

// call is one forwarded call's answer.
type call struct {
	status int
	header http.Header
	body   []byte
}

func forward(next http.Handler, r *http.Request, body []byte) call {
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, r2)
	return call{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

func (f *Fixes) serve(next http.Handler, action string, body []byte, w http.ResponseWriter, r *http.Request) {
	var req request
	_ = json.Unmarshal(body, &req) // a body the engine cannot read either gets its answer from it
	started := f.now()
	switch action {
	case "CreateQueue":
		body = defaultMaximumMessageSize(body)
	case "SendMessage", "SendMessageBatch":
		if e := f.checkSize(next, r, req); e != nil {
			f.refusedTooLarge.Add(1)
			writeError(w, http.StatusBadRequest, e.code, e.message)
			return
		}
	case "ReceiveMessage":
		body = askForEverything(body)
		if f.staleCounts {
			f.receiving(req.QueueURL, started)
		}
	}
	if f.maxRequest > 0 && len(body) > f.maxRequest {
		f.refusedRequests.Add(1)
		writeError(w, http.StatusBadRequest, "UnsupportedOperation", fmt.Sprintf(
			"%s (%d bytes) are not supported by the local cloud on this engine: its engine cannot read a request over %d bytes (SQS takes a message of up to %d bytes)",
			FeatureLargeRequest, f.maxRequest, f.maxRequest, MaxMessageSize))
		return
	}
	c := forward(next, r, body)
	if action == "ReceiveMessage" && f.staleCounts {
		// A long poll may have caught up again before it returned: forget
		// what ran out by now rather than count it twice.
		f.receiving(req.QueueURL, f.now())
	}
	if c.status == http.StatusOK {
		var err error
		switch action {
		case "SendMessage", "SendMessageBatch":
			c.body, err = sendDigests(req, c.body)
		case "ReceiveMessage":
			c.body, err = f.received(next, r, req, c.body)
		case "ChangeMessageVisibility", "ChangeMessageVisibilityBatch":
			f.visibilityChanged(req)
		case "DeleteMessage", "DeleteMessageBatch":
			f.deleted(req)
		case "PurgeQueue", "DeleteQueue", "SetQueueAttributes":
			f.forget(req.QueueURL, action != "SetQueueAttributes")
		case "GetQueueAttributes":
			c.body, err = f.correctCounts(req.QueueURL, c.body)
		case "CreateQueue", "GetQueueUrl", "ListQueues", "ListDeadLetterSourceQueues":
			c.body, err = queueURLsAt(r, c.body)
		}
		if err != nil {
			writeError(w, http.StatusInternalServerError, "InternalFailure", fmt.Sprintf("the local cloud could not read the engine's %s answer: %v", action, err))
			return
		}
	} else if c.status >= 400 {
		c.body = queryCompatible(c.header, c.body)
	}
	for k, v := range c.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(c.body)))
	w.WriteHeader(c.status)
	_, _ = w.Write(c.body)
}

// The parts of SQS JSON requests the corrections read.
type (
	request struct {
		QueueURL                    string               `json:"QueueUrl"`
		MessageBody                 string               `json:"MessageBody"`
		MessageAttributes           map[string]attribute `json:"MessageAttributes"`
		Entries                     []entry              `json:"Entries"`
		MessageAttributeNames       []string             `json:"MessageAttributeNames"`
		MessageSystemAttributeNames []string             `json:"MessageSystemAttributeNames"`
		AttributeNames              []string             `json:"AttributeNames"`
		VisibilityTimeout           *int                 `json:"VisibilityTimeout"`
		ReceiptHandle               string               `json:"ReceiptHandle"`
	}
	entry struct {
		ID                string               `json:"Id"`
		MessageBody       string               `json:"MessageBody"`
		MessageAttributes map[string]attribute `json:"MessageAttributes"`
		ReceiptHandle     string               `json:"ReceiptHandle"`
		VisibilityTimeout *int                 `json:"VisibilityTimeout"`
	}
	attribute struct {
		DataType    string  `json:"DataType"`
		StringValue *string `json:"StringValue,omitempty"`
		BinaryValue []byte  `json:"BinaryValue,omitempty"`
	}
)

// size is what a message counts against the size limit: its body and each
// attribute's name, type and value.
func size(body string, attrs map[string]attribute) int {
	n := len(body)
	for name, a := range attrs {
		n += len(name) + len(a.DataType) + len(a.BinaryValue)
		if a.StringValue != nil {
			n += len(*a.StringValue)
		}
	}
	return n
}

// md5OfAttributes is MD5OfMessageAttributes as the SQS developer guide
// defines it: the attributes sorted by name; for each, its name, its data
// type, a transport byte (1 for a string value, 2 for a binary one) and its
// value, each of the three preceded by its length as a 4-byte big-endian
// number. "" when there are no attributes.
func md5OfAttributes(attrs map[string]attribute) string {
	if len(attrs) == 0 {
		return ""
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	h := md5.New()
	part := func(b []byte) {
		_ = binary.Write(h, binary.BigEndian, uint32(len(b)))
		h.Write(b)
	}
	for _, n := range names {
		a := attrs[n]
		part([]byte(n))
		part([]byte(a.DataType))
		if a.StringValue != nil {
			h.Write([]byte{1})
			part([]byte(*a.StringValue))
		} else {
			h.Write([]byte{2})
			part(a.BinaryValue)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

type apiError struct{ code, message string }

// checkSize refuses a message over the queue's MaximumMessageSize (1 MiB
// at most), and a batch whose messages together are over 1 MiB.
func (f *Fixes) checkSize(next http.Handler, r *http.Request, req request) *apiError {
	limit := min(f.settings(next, r, req.QueueURL).maxSize, MaxMessageSize)
	if limit <= 0 {
		limit = MaxMessageSize
	}
	tooLong := func(n int) *apiError {
		return &apiError{"InvalidParameterValue", fmt.Sprintf("One or more parameters are invalid. Reason: Message must be shorter than %d bytes (this one has %d).", limit, n)}
	}
	if req.Entries == nil {
		if n := size(req.MessageBody, req.MessageAttributes); n > limit {
			return tooLong(n)
		}
		return nil
	}
	total := 0
	for _, e := range req.Entries {
		n := size(e.MessageBody, e.MessageAttributes)
		if n > limit {
			return tooLong(n)
		}
		total += n
	}
	if total > MaxMessageSize {
		return &apiError{"AWS.SimpleQueueService.BatchRequestTooLong", fmt.Sprintf("Batch requests cannot be longer than %d bytes. You have sent %d bytes.", MaxMessageSize, total)}
	}
	return nil
}

// settings reads (once, until SetQueueAttributes) the queue's
// MaximumMessageSize and VisibilityTimeout from the engine.
func (f *Fixes) settings(next http.Handler, r *http.Request, queueURL string) queue {
	name := queueName(queueURL)
	f.mu.Lock()
	q := f.queueLocked(name)
	if q.maxSize > 0 {
		s := *q
		f.mu.Unlock()
		return s
	}
	f.mu.Unlock()
	body, _ := json.Marshal(map[string]any{"QueueUrl": queueURL, "AttributeNames": []string{"MaximumMessageSize", "VisibilityTimeout"}})
	req := r.Clone(r.Context())
	req.Header = http.Header{"X-Amz-Target": {"AmazonSQS.GetQueueAttributes"}, "Content-Type": {"application/x-amz-json-1.0"},
		"Authorization": r.Header.Values("Authorization")}
	c := forward(next, req, body)
	var out struct{ Attributes map[string]string }
	if c.status != http.StatusOK || json.Unmarshal(c.body, &out) != nil {
		return queue{} // the send itself will meet the engine's error
	}
	maxSize, _ := strconv.Atoi(out.Attributes["MaximumMessageSize"])
	vis, _ := strconv.Atoi(out.Attributes["VisibilityTimeout"])
	f.mu.Lock()
	defer f.mu.Unlock()
	q = f.queueLocked(name)
	q.maxSize, q.visibility = maxSize, time.Duration(vis)*time.Second
	return *q
}

func (f *Fixes) queueLocked(name string) *queue {
	q := f.queues[name]
	if q == nil {
		q = &queue{inflight: map[string]time.Time{}}
		f.queues[name] = q
	}
	return q
}

func queueName(queueURL string) string { return queueURL[strings.LastIndexByte(queueURL, '/')+1:] }

// sendDigests adds MD5OfMessageAttributes to a send's answer where the
// engine left it out.
func sendDigests(req request, body []byte) ([]byte, error) {
	if req.Entries == nil {
		if len(req.MessageAttributes) == 0 {
			return body, nil
		}
		var out map[string]any
		if err := json.Unmarshal(body, &out); err != nil {
			return nil, err
		}
		if out["MD5OfMessageAttributes"] != nil {
			return body, nil
		}
		out["MD5OfMessageAttributes"] = md5OfAttributes(req.MessageAttributes)
		return json.Marshal(out)
	}
	byID := map[string]entry{}
	for _, e := range req.Entries {
		byID[e.ID] = e
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, err
	}
	var ok []map[string]any
	if len(out["Successful"]) > 0 {
		if err := json.Unmarshal(out["Successful"], &ok); err != nil {
			return nil, err
		}
	}
	changed := false
	for _, s := range ok {
		id, _ := s["Id"].(string)
		if e := byID[id]; len(e.MessageAttributes) > 0 && s["MD5OfMessageAttributes"] == nil {
			s["MD5OfMessageAttributes"], changed = md5OfAttributes(e.MessageAttributes), true
		}
	}
	if !changed {
		return body, nil
	}
	raw, err := json.Marshal(ok)
	if err != nil {
		return nil, err
	}
	out["Successful"] = raw
	return json.Marshal(out)
}

// defaultMaximumMessageSize gives a new queue SQS's default
// MaximumMessageSize, 1 MiB, where the request sets none (kumo's own
// default is 256 KiB).
func defaultMaximumMessageSize(body []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	attrs := map[string]string{}
	if raw, ok := m["Attributes"]; ok && json.Unmarshal(raw, &attrs) != nil {
		return body
	}
	if _, set := attrs["MaximumMessageSize"]; set {
		return body
	}
	attrs["MaximumMessageSize"] = strconv.Itoa(MaxMessageSize)
	m["Attributes"], _ = json.Marshal(attrs)
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// askForEverything makes a receive ask the engine for every attribute:
// what the caller asked for is given back by received.
func askForEverything(body []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	delete(m, "AttributeNames")
	m["MessageAttributeNames"] = json.RawMessage(`["All"]`)
	m["MessageSystemAttributeNames"] = json.RawMessage(`["All"]`)
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// wantsAttribute says whether a message attribute name was asked for:
// "All" or ".*" ask for all, "prefix.*" for those under the prefix.
func wantsAttribute(asked []string, name string) bool {
	for _, a := range asked {
		switch {
		case a == "All" || a == ".*" || a == name:
			return true
		case strings.HasSuffix(a, ".*") && strings.HasPrefix(name, strings.TrimSuffix(a, "*")):
			return true
		}
	}
	return false
}

// received keeps of each message the attributes the caller asked for, with
// their digest, and records the receipt handles while they are in flight.
func (f *Fixes) received(next http.Handler, r *http.Request, req request, body []byte) ([]byte, error) {
	var out map[string]json.RawMessage
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, err
	}
	if len(out["Messages"]) == 0 {
		return body, nil
	}
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(out["Messages"], &msgs); err != nil {
		return nil, err
	}
	system := append(append([]string(nil), req.MessageSystemAttributeNames...), req.AttributeNames...)
	var handles []string
	for _, m := range msgs {
		var sys map[string]string
		_ = json.Unmarshal(m["Attributes"], &sys)
		kept := map[string]string{}
		for k, v := range sys {
			if wantsAttribute(system, k) && !strings.HasSuffix(k, ".*") {
				kept[k] = v
			}
		}
		delete(m, "Attributes")
		if len(kept) > 0 {
			m["Attributes"], _ = json.Marshal(kept)
		}
		var attrs map[string]attribute
		_ = json.Unmarshal(m["MessageAttributes"], &attrs)
		keptAttrs := map[string]attribute{}
		for k, v := range attrs {
			if wantsAttribute(req.MessageAttributeNames, k) {
				keptAttrs[k] = v
			}
		}
		delete(m, "MessageAttributes")
		delete(m, "MD5OfMessageAttributes")
		if len(keptAttrs) > 0 {
			m["MessageAttributes"], _ = json.Marshal(keptAttrs)
			m["MD5OfMessageAttributes"], _ = json.Marshal(md5OfAttributes(keptAttrs))
		}
		var h string
		_ = json.Unmarshal(m["ReceiptHandle"], &h)
		handles = append(handles, h)
	}
	if f.staleCounts {
		timeout := f.settings(next, r, req.QueueURL).visibility
		if req.VisibilityTimeout != nil {
			timeout = time.Duration(*req.VisibilityTimeout) * time.Second
		}
		f.inFlight(req.QueueURL, handles, f.now().Add(timeout))
	}
	raw, err := json.Marshal(msgs)
	if err != nil {
		return nil, err
	}
	out["Messages"] = raw
	return json.Marshal(out)
}

// queueURLsAt makes the queue URLs of an answer name the endpoint the
// caller reached, as AWS's name its regional endpoint.
func queueURLsAt(r *http.Request, body []byte) ([]byte, error) {
	if r.Host == "" {
		return body, nil
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	rewrite := func(s string) string {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return s
		}
		u.Scheme, u.Host = scheme, r.Host
		return u.String()
	}
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, err
	}
	for k, v := range out {
		switch v := v.(type) {
		case string:
			if strings.EqualFold(k, "QueueUrl") {
				out[k] = rewrite(v)
			}
		case []any:
			if strings.EqualFold(k, "QueueUrls") {
				for i, u := range v {
					if s, ok := u.(string); ok {
						v[i] = rewrite(s)
					}
				}
			}
		}
	}
	return json.Marshal(out)
}

// queryCompatible gives an SQS error answer the x-amzn-query-error header
// AWS's JSON endpoint sends ("code;fault"), and the model's error name in
// __type, where the engine left them out.
func queryCompatible(header http.Header, body []byte) []byte {
	if header.Get("X-Amzn-Query-Error") != "" {
		return body
	}
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	t, _ := m["__type"].(string)
	if t == "" {
		return body
	}
	name := sqsquery.JSONErrorName(t)
	code, fault := sqsquery.QueryCode(name)
	header.Set("X-Amzn-Query-Error", code+";"+fault)
	m["__type"] = "com.amazonaws.sqs#" + name
	if _, ok := m["message"]; !ok {
		m["message"] = m["Message"]
	}
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	name := sqsquery.JSONErrorName(code)
	qcode, fault := sqsquery.QueryCode(name)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Query-Error", qcode+";"+fault)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + name, "message": message})
}
