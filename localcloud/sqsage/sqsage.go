package sqsage

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clubdev/club/localcloud/internal/httptee"
)

// Tracker is an http.Handler that forwards every request to Next and keeps,
// per queue, the messages sent and not yet deleted. It is safe for
// concurrent use.
type Tracker struct {
	next http.Handler
	now  func() time.Time

	mu     sync.Mutex
	queues map[string]*queue // by queue name
}

type queue struct {
	messages map[string]*message // by message id
	receipts map[string]string   // receipt handle → message id
	// untrackedSince is when Oldest first saw the queue hold messages the
	// tracker has not dated (zero while it holds none): they were sent no
	// later than that.
	untrackedSince time.Time
}

type message struct {
	sentAt   time.Time
	receipts []string
}

// New returns a Tracker in front of next. now is the clock (nil: time.Now).
func New(next http.Handler, now func() time.Time) *Tracker {
	if now == nil {
		now = time.Now
	}
	return &Tracker{next: next, now: now, queues: map[string]*queue{}}
}

// Age is a queue's oldest message as the tracker knows it.
type Age struct {
	Queue string `json:"queue"`
	// Messages is how many messages the queue holds (sent, not deleted).
	Messages int `json:"messages"`
	// OldestSentAt is the SentTimestamp of the oldest; nil when empty.
	OldestSentAt *time.Time `json:"oldest_sent_at"`
	// AgeSeconds is now − OldestSentAt; 0 when empty.
	AgeSeconds float64 `json:"age_seconds"`
	// Untracked is how many more messages kumo holds than the tracker
	// knows: SNS deliveries not yet received (see the package doc). When it
	// is not 0, Complete is false and the age is a lower bound: they were
	// sent no later than UntrackedSince, when Oldest first saw them, so
	// AgeSeconds is at least now − UntrackedSince. At that first sight
	// the bound is 0 s, which says nothing: Known is false then, and an
	// age that is not Known must not be read as a measurement.
	Untracked      int        `json:"untracked"`
	UntrackedSince *time.Time `json:"untracked_since,omitempty"`
	Complete       bool       `json:"complete"`
	// Known is true when AgeSeconds is the age (Complete) or a lower bound
	// above 0 s; false when the queue holds messages of unknown age only
	// since this very reading.
	Known bool `json:"known"`
}

// tracked names the SQS actions that change what a queue holds.
var tracked = map[string]bool{
	"SendMessage": true, "SendMessageBatch": true, "ReceiveMessage": true,
	"DeleteMessage": true, "DeleteMessageBatch": true, "PurgeQueue": true, "DeleteQueue": true,
}

func (t *Tracker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	action, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
	if !ok || !tracked[action] {
		t.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read request", http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	tw := httptee.New(w, 0)
	t.next.ServeHTTP(tw, r)
	if tw.Status() != http.StatusOK {
		return
	}
	if action == "ReceiveMessage" && !bytes.Contains(tw.Body.Bytes(), []byte(`"MessageId"`)) {
		return // an empty receive, as most of a long-polling consumer's are: nothing to decode
	}
	t.observe(action, body, tw.Body.Bytes())
}

// The parts of the SQS JSON protocol the tracker reads.
type (
	request struct {
		QueueURL      string `json:"QueueUrl"`
		ReceiptHandle string `json:"ReceiptHandle"`
		Entries       []struct {
			ID            string `json:"Id"`
			ReceiptHandle string `json:"ReceiptHandle"`
		} `json:"Entries"`
	}
	response struct {
		MessageID  string `json:"MessageId"`
		Successful []struct {
			ID        string `json:"Id"`
			MessageID string `json:"MessageId"`
		} `json:"Successful"`
		Messages []struct {
			MessageID     string `json:"MessageId"`
			ReceiptHandle string `json:"ReceiptHandle"`
			// Only the one attribute read: not a map of them all per
			// message.
			Attributes struct {
				SentTimestamp string `json:"SentTimestamp"`
			} `json:"Attributes"`
		} `json:"Messages"`
	}
)

func (t *Tracker) observe(action string, reqBody, respBody []byte) {
	var req request
	if json.Unmarshal(reqBody, &req) != nil || req.QueueURL == "" {
		return
	}
	var resp response
	_ = json.Unmarshal(respBody, &resp)
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	name := queueName(req.QueueURL)
	q := t.queues[name]
	if q == nil {
		q = &queue{messages: map[string]*message{}, receipts: map[string]string{}}
		t.queues[name] = q
	}
	switch action {
	case "SendMessage":
		q.add(resp.MessageID, now)
	case "SendMessageBatch":
		for _, s := range resp.Successful {
			q.add(s.MessageID, now)
		}
	case "ReceiveMessage":
		for _, m := range resp.Messages {
			sent := now
			if ms, err := strconv.ParseInt(m.Attributes.SentTimestamp, 10, 64); err == nil {
				sent = time.UnixMilli(ms).UTC()
			}
			msg := q.add(m.MessageID, sent)
			msg.sentAt = sent // the queue's own time wins over the tracker's
			msg.receipts = append(msg.receipts, m.ReceiptHandle)
			q.receipts[m.ReceiptHandle] = m.MessageID
		}
	case "DeleteMessage":
		q.remove(req.ReceiptHandle)
	case "DeleteMessageBatch":
		ok := map[string]bool{}
		for _, s := range resp.Successful {
			ok[s.ID] = true
		}
		for _, e := range req.Entries {
			if ok[e.ID] {
				q.remove(e.ReceiptHandle)
			}
		}
	case "PurgeQueue", "DeleteQueue":
		delete(t.queues, name)
	}
}

// add records a message if it is new and returns it.
func (q *queue) add(id string, sentAt time.Time) *message {
	if id == "" {
		return &message{}
	}
	m := q.messages[id]
	if m == nil {
		m = &message{sentAt: sentAt}
		q.messages[id] = m
	}
	return m
}

// remove forgets the message a receipt handle belongs to.
func (q *queue) remove(receipt string) {
	id, ok := q.receipts[receipt]
	if !ok {
		return
	}
	if m := q.messages[id]; m != nil {
		for _, r := range m.receipts {
			delete(q.receipts, r)
		}
	}
	delete(q.messages, id)
}

// Oldest returns the age of the oldest message of the queue at queueURL (a
// URL or a name). Before answering, it asks kumo whether the queue holds
// anything at all and forgets its messages if not (see the package doc).
func (t *Tracker) Oldest(queueURL string) (a Age) {
	name := queueName(queueURL)
	depth, known := t.depth(queueURL)
	if known && depth == 0 {
		t.mu.Lock()
		delete(t.queues, name)
		t.mu.Unlock()
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	a = Age{Queue: name, Complete: true, Known: true}
	q := t.queues[name]
	if q == nil && known && depth > 0 {
		q = &queue{messages: map[string]*message{}, receipts: map[string]string{}}
		t.queues[name] = q
	}
	if q == nil {
		return a
	}
	var oldest time.Time
	for _, m := range q.messages {
		if oldest.IsZero() || m.sentAt.Before(oldest) {
			oldest = m.sentAt
		}
	}
	a.Messages = len(q.messages)
	if !oldest.IsZero() {
		o := oldest.UTC()
		a.OldestSentAt = &o
		a.AgeSeconds = max(now.Sub(oldest), 0).Seconds()
	}
	if !known || depth <= a.Messages {
		q.untrackedSince = time.Time{}
		return a
	}
	a.Untracked, a.Complete = depth-a.Messages, false
	if q.untrackedSince.IsZero() {
		q.untrackedSince = now
	}
	since := q.untrackedSince.UTC()
	a.UntrackedSince = &since
	a.AgeSeconds = max(a.AgeSeconds, now.Sub(since).Seconds())
	a.Known = a.AgeSeconds > 0
	return a
}

// depth asks kumo (GetQueueAttributes, which receives nothing) how many
// messages the queue holds, visible, in flight or delayed; known is false if
// it could not tell.
func (t *Tracker) depth(queueURL string) (n int, known bool) {
	if !strings.Contains(queueURL, "/") {
		return 0, false
	}
	body, _ := json.Marshal(map[string]any{"QueueUrl": queueURL, "AttributeNames": []string{"All"}})
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("X-Amz-Target", "AmazonSQS.GetQueueAttributes")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	rec := httptest.NewRecorder()
	t.next.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return 0, false
	}
	var out struct {
		Attributes map[string]string `json:"Attributes"`
	}
	if json.Unmarshal(rec.Body.Bytes(), &out) != nil || out.Attributes == nil {
		return 0, false
	}
	for _, k := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
		v, err := strconv.Atoi(out.Attributes[k])
		if err != nil {
			return 0, false
		}
		n += v
	}
	return n, true
}

// Handler serves GET ?queue=URL with the queue's Age as JSON.
func (t *Tracker) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("queue")
		if q == "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"code":"queue_required","message":"?queue= names the queue (URL or name)"}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(t.Oldest(q))
	})
}

// queueName is the last part of a queue URL (or the name itself).
func queueName(url string) string {
	return url[strings.LastIndexByte(url, '/')+1:]
}
