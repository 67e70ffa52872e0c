package front

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// shortPollInterval is how often a long poll the front holds for a
// serialised engine asks the engine again.
const shortPollInterval = 100 * time.Millisecond

// maxWaitTimeSeconds is SQS's longest ReceiveMessage wait.
const maxWaitTimeSeconds = 20

// Serialised wraps next, an emulator that is not safe under concurrent
// requests (moto answers some of them 500 when two writes overlap), so that
// it receives one request at a time of each group of services that share
// state: DynamoDB with its streams, and everything else (SNS delivers into
// SQS). A slow DynamoDB transaction (moto copies each table it touches)
// then holds back no queue or bucket.
//
// A long poll would hold every other caller back for up to 20 seconds, so
// an SQS ReceiveMessage with WaitTimeSeconds is turned into short polls,
// repeated every 100 ms until one returns messages or the wait is over: the
// caller sees a long poll, and the engine never waits while it holds the
// lock. A ReceiveMessage without WaitTimeSeconds is a short poll here (a
// queue's ReceiveMessageWaitTimeSeconds is not applied).
func Serialised(next http.Handler) *SerialEngine {
	return &SerialEngine{next: next}
}

// SerialEngine is the handler Serialised returns.
type SerialEngine struct {
	// dynamodb is held by each DynamoDB and DynamoDB Streams call; other by
	// each call of any other service.
	dynamodb, other sync.Mutex
	next            http.Handler
}

// Exclusive runs fn with the engine's DynamoDB to itself: no other DynamoDB
// or DynamoDB Streams request reaches it until fn returns. fn calls the
// engine through next (not through the SerialEngine, which would wait for
// itself).
func (s *SerialEngine) Exclusive(fn func(next http.Handler)) {
	s.dynamodb.Lock()
	defer s.dynamodb.Unlock()
	fn(s.next)
}

// lock is the lock of r's group of services.
func (s *SerialEngine) lock(r *http.Request) *sync.Mutex {
	if strings.HasPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB") {
		return &s.dynamodb
	}
	return &s.other
}

func (s *SerialEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Amz-Target") == "AmazonSQS.ReceiveMessage" {
		s.receive(w, r)
		return
	}
	mu := s.lock(r)
	mu.Lock()
	defer mu.Unlock()
	s.next.ServeHTTP(w, r)
}

// receive answers a ReceiveMessage with short polls to the engine.
func (s *SerialEngine) receive(w http.ResponseWriter, r *http.Request) {
	body, ok := peekBody(w, r)
	if !ok {
		return
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(body, &in); err != nil {
		// Malformed: the engine's to refuse.
		s.other.Lock()
		defer s.other.Unlock()
		s.next.ServeHTTP(w, r)
		return
	}
	wait := 0
	if raw, ok := in["WaitTimeSeconds"]; ok {
		n, err := strconv.Atoi(string(raw))
		if err != nil || n < 0 || n > maxWaitTimeSeconds {
			// Out of range: the engine's to refuse, at once.
			s.other.Lock()
			defer s.other.Unlock()
			s.next.ServeHTTP(w, r)
			return
		}
		wait = n
	}
	in["WaitTimeSeconds"] = json.RawMessage("0")
	short, err := json.Marshal(in)
	if err != nil {
		http.Error(w, "encode ReceiveMessage: "+err.Error(), http.StatusInternalServerError)
		return
	}
	deadline := time.Now().Add(time.Duration(wait) * time.Second)
	for {
		rec := s.once(r, short)
		if rec.Code != http.StatusOK || hasMessages(rec.Body.Bytes()) || !time.Now().Before(deadline) {
			copyResponse(w, rec)
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(shortPollInterval):
		}
	}
}

// once sends one short poll to the engine under the lock.
func (s *SerialEngine) once(r *http.Request, body []byte) *httptest.ResponseRecorder {
	out := r.Clone(r.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.Header.Del("Content-Length")
	rec := httptest.NewRecorder()
	s.other.Lock()
	defer s.other.Unlock()
	s.next.ServeHTTP(rec, out)
	return rec
}

// hasMessages reports whether a ReceiveMessage answer holds a message.
func hasMessages(answer []byte) bool {
	var out struct{ Messages []json.RawMessage }
	return json.Unmarshal(answer, &out) == nil && len(out.Messages) > 0
}

// copyResponse writes a recorded answer to w.
func copyResponse(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// handlerTransport carries the front's own SDK calls to a handler in the
// same process, so that they meet the engine the way clients' calls do
// (through Serialised when the engine needs it).
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	in := r.Clone(r.Context())
	if in.Host == "" {
		in.Host = r.URL.Host
	}
	if in.Body == nil {
		in.Body = http.NoBody
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, in)
	return rec.Result(), nil
}

// NewBufferedProxy returns a handler that forwards each call to target as a
// whole: the request body read first, the answer read to its end before a
// byte of it is written. Serialised engines sit behind it (they answer no
// long poll, so nothing needs streaming).
//
// An answer that breaks on its way from the engine (seen with moto:
// "use of closed network connection" while the proxy read a 200 body, on
// the proxy's own connection) is never passed on half-written. A call that
// only reads (see readOnly) is asked again, up to three times; any other
// is answered 500 InternalFailure, since the engine may have carried it
// out, which the SDK retries as it would AWS's.
func NewBufferedProxy(target *url.URL) http.Handler {
	return &bufferedProxy{target: target, client: &http.Client{Transport: &http.Transport{
		Proxy: nil, MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second,
	}}}
}

type bufferedProxy struct {
	target *url.URL
	client *http.Client
}

func (p *bufferedProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, ok := peekBody(w, r)
	if !ok {
		return
	}
	attempts := 1
	if readOnly(r) {
		attempts = 3
	}
	var err error
	for range attempts {
		var resp *http.Response
		var answer []byte
		if resp, answer, err = p.once(r, body); err == nil {
			for k, vs := range resp.Header {
				w.Header()[k] = vs
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
			w.WriteHeader(resp.StatusCode)
			_, _ = w.Write(answer)
			return
		}
		if r.Context().Err() != nil {
			return
		}
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusInternalServerError)
	msg, _ := json.Marshal("the engine's answer was lost on its way: " + err.Error())
	_, _ = w.Write([]byte(`{"__type":"InternalFailure","message":` + string(msg) + `}`))
}

// once sends the call to the engine and reads the whole answer.
func (p *bufferedProxy) once(r *http.Request, body []byte) (*http.Response, []byte, error) {
	u := *p.target
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	out.Header = r.Header.Clone()
	out.Header.Del("Content-Length")
	out.Host = r.Host
	resp, err := p.client.Do(out)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	resp.Header.Del("Content-Length")
	return resp, answer, nil
}

// readOnly reports whether a call only reads, so that asking the engine
// again cannot change anything: S3 GET and HEAD, and the JSON protocol's
// Get/Describe/List/Query/Scan operations (not ReceiveMessage, which hides
// what it returns).
func readOnly(r *http.Request) bool {
	target := r.Header.Get("X-Amz-Target")
	if target == "" {
		return r.Method == http.MethodGet || r.Method == http.MethodHead
	}
	_, op, _ := strings.Cut(target, ".")
	for _, prefix := range []string{"Get", "BatchGet", "TransactGet", "Describe", "List", "Query", "Scan"} {
		if strings.HasPrefix(op, prefix) {
			return true
		}
	}
	return false
}
