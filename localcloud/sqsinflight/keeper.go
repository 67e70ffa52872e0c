package sqsinflight

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clubdev/club/localcloud/internal/httptee"
	"github.com/clubdev/club/localcloud/state"
)

// Message is one message in flight, as the journal keeps it.
type Message struct {
	QueueURL          string                     `json:"queue_url"`
	MessageID         string                     `json:"message_id"`
	Body              string                     `json:"body"`
	MessageAttributes map[string]json.RawMessage `json:"message_attributes,omitempty"`
	Attributes        map[string]string          `json:"attributes,omitempty"`
	ReceiptHandle     string                     `json:"receipt_handle"`
	VisibleAt         time.Time                  `json:"visible_at"`
}

// entry is one journal line.
type entry struct {
	Op string `json:"op"` // receive, visibility, delete, purge
	// receive
	Messages []Message `json:"messages,omitempty"`
	// visibility, delete
	QueueURL  string    `json:"queue_url,omitempty"`
	Receipts  []string  `json:"receipts,omitempty"`
	VisibleAt time.Time `json:"visible_at,omitzero"`
}

// Keeper is an http.Handler in front of kumo's SQS (JSON protocol) that
// journals what is in flight. Safe for concurrent use.
type Keeper struct {
	next    http.Handler
	journal *state.Journal
	path    string
	log     *slog.Logger
	now     func() time.Time

	mu       sync.Mutex
	inflight map[string]*Message // by queue URL + message id
	receipts map[string]string   // receipt handle → key
	lines    int
	timeouts map[string]int // queue URL → its VisibilityTimeout, asked once
}

// Open reads the journal at path and returns a Keeper that forwards to next
// and the messages that were in flight when the last run stopped.
func Open(path string, next http.Handler, log *slog.Logger) (*Keeper, []Message, error) {
	k := &Keeper{next: next, path: path, log: log, now: time.Now,
		inflight: map[string]*Message{}, receipts: map[string]string{}, timeouts: map[string]int{}}
	j, _, torn, err := state.OpenJournal(path, func(line []byte) error {
		var e entry
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		k.apply(e)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if torn {
		log.Warn("the in-flight journal ended in a half-written line (a crash of the machine): dropped it", "journal", path)
	}
	k.journal = j
	return k, k.inflightLocked(), nil
}

// apply changes the in-flight set by one journal entry; k.mu is held (or
// the Keeper is not shared yet).
func (k *Keeper) apply(e entry) {
	k.lines++
	switch e.Op {
	case "receive":
		for _, m := range e.Messages {
			key := m.QueueURL + "\x00" + m.MessageID
			if old := k.inflight[key]; old != nil {
				delete(k.receipts, old.ReceiptHandle)
			}
			msg := m
			k.inflight[key] = &msg
			k.receipts[m.ReceiptHandle] = key
		}
	case "visibility":
		for _, r := range e.Receipts {
			if m := k.inflight[k.receipts[r]]; m != nil {
				m.VisibleAt = e.VisibleAt
			}
		}
	case "delete":
		for _, r := range e.Receipts {
			if key, ok := k.receipts[r]; ok {
				delete(k.inflight, key)
				delete(k.receipts, r)
			}
		}
	case "purge":
		for key, m := range k.inflight {
			if m.QueueURL == e.QueueURL {
				delete(k.inflight, key)
				delete(k.receipts, m.ReceiptHandle)
			}
		}
	}
}

func (k *Keeper) inflightLocked() []Message {
	out := make([]Message, 0, len(k.inflight))
	for _, m := range k.inflight {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].VisibleAt.Equal(out[j].VisibleAt) {
			return out[i].VisibleAt.Before(out[j].VisibleAt)
		}
		return out[i].MessageID < out[j].MessageID
	})
	return out
}

// InFlight returns the messages in flight now.
func (k *Keeper) InFlight() []Message {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.inflightLocked()
}

// watched names the SQS actions that change what is in flight.
var watched = map[string]bool{
	"ReceiveMessage": true, "DeleteMessage": true, "DeleteMessageBatch": true,
	"ChangeMessageVisibility": true, "ChangeMessageVisibilityBatch": true, "PurgeQueue": true, "DeleteQueue": true,
}

func (k *Keeper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	action, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
	if !ok || !watched[action] {
		k.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read request", http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req request
	if json.Unmarshal(body, &req) != nil || req.QueueURL == "" {
		k.next.ServeHTTP(w, r)
		return
	}
	if action == "ReceiveMessage" && req.VisibilityTimeout == nil {
		// Ask for the queue's timeout before the receive, not after: a
		// receive answer must reach the client as soon as kumo gives it.
		k.queueTimeout(r, req.QueueURL)
	}
	start := k.now()
	tw := httptee.New(w, 0)
	k.next.ServeHTTP(tw, r)
	if tw.Status() != http.StatusOK {
		return
	}
	e, ok := k.entryFor(action, req, tw.Body.Bytes(), start)
	if !ok {
		return
	}
	line, err := json.Marshal(e)
	if err != nil {
		k.log.Error("cannot keep in-flight messages", "action", action, "error", err)
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.apply(e)
	if err := k.journal.Append(line); err != nil {
		k.log.Error("cannot keep in-flight messages: they are lost if the local cloud stops", "action", action, "error", err)
	}
	if k.lines > 10000 && k.lines > 4*len(k.inflight) {
		k.compactLocked()
	}
}

// entryFor is the journal entry of a successful call.
func (k *Keeper) entryFor(action string, req request, respBody []byte, start time.Time) (entry, bool) {
	switch action {
	case "ReceiveMessage":
		var resp struct {
			Messages []struct {
				MessageID         string                     `json:"MessageId"`
				ReceiptHandle     string                     `json:"ReceiptHandle"`
				Body              string                     `json:"Body"`
				Attributes        map[string]string          `json:"Attributes"`
				MessageAttributes map[string]json.RawMessage `json:"MessageAttributes"`
			} `json:"Messages"`
		}
		// Most receives of a long-polling consumer come back empty: no
		// need to decode those.
		if !bytes.Contains(respBody, []byte(`"MessageId"`)) || json.Unmarshal(respBody, &resp) != nil || len(resp.Messages) == 0 {
			return entry{}, false
		}
		timeout := 30
		if req.VisibilityTimeout != nil {
			timeout = *req.VisibilityTimeout
		} else {
			k.mu.Lock()
			if t, ok := k.timeouts[req.QueueURL]; ok {
				timeout = t
			}
			k.mu.Unlock()
		}
		// The deadline counts from when the receive began: never later
		// than kumo's own.
		visibleAt := start.Add(time.Duration(timeout) * time.Second).UTC()
		e := entry{Op: "receive"}
		for _, m := range resp.Messages {
			e.Messages = append(e.Messages, Message{
				QueueURL: req.QueueURL, MessageID: m.MessageID, Body: m.Body, ReceiptHandle: m.ReceiptHandle,
				Attributes: m.Attributes, MessageAttributes: m.MessageAttributes, VisibleAt: visibleAt,
			})
		}
		return e, true
	case "DeleteMessage":
		return entry{Op: "delete", QueueURL: req.QueueURL, Receipts: []string{req.ReceiptHandle}}, true
	case "DeleteMessageBatch", "ChangeMessageVisibilityBatch":
		var resp struct {
			Successful []struct {
				ID string `json:"Id"`
			} `json:"Successful"`
		}
		_ = json.Unmarshal(respBody, &resp)
		done := map[string]bool{}
		for _, s := range resp.Successful {
			done[s.ID] = true
		}
		if action == "DeleteMessageBatch" {
			e := entry{Op: "delete", QueueURL: req.QueueURL}
			for _, en := range req.Entries {
				if done[en.ID] {
					e.Receipts = append(e.Receipts, en.ReceiptHandle)
				}
			}
			return e, len(e.Receipts) > 0
		}
		// One entry per distinct timeout would be exact; the batch's
		// longest is kept for all (a later redelivery, never an earlier).
		e := entry{Op: "visibility", QueueURL: req.QueueURL}
		longest := 0
		for _, en := range req.Entries {
			if done[en.ID] {
				e.Receipts = append(e.Receipts, en.ReceiptHandle)
				longest = max(longest, en.VisibilityTimeout)
			}
		}
		e.VisibleAt = k.now().Add(time.Duration(longest) * time.Second).UTC()
		return e, len(e.Receipts) > 0
	case "ChangeMessageVisibility":
		t := 0
		if req.VisibilityTimeout != nil {
			t = *req.VisibilityTimeout
		}
		return entry{Op: "visibility", QueueURL: req.QueueURL, Receipts: []string{req.ReceiptHandle},
			VisibleAt: k.now().Add(time.Duration(t) * time.Second).UTC()}, true
	case "PurgeQueue", "DeleteQueue":
		return entry{Op: "purge", QueueURL: req.QueueURL}, true
	}
	return entry{}, false
}

// request is the part of the SQS JSON requests the keeper reads
// (ReceiveMessage and ChangeMessageVisibility both call their timeout
// VisibilityTimeout).
type request struct {
	QueueURL          string `json:"QueueUrl"`
	ReceiptHandle     string `json:"ReceiptHandle"`
	VisibilityTimeout *int   `json:"VisibilityTimeout"`
	Entries           []struct {
		ID                string `json:"Id"`
		ReceiptHandle     string `json:"ReceiptHandle"`
		VisibilityTimeout int    `json:"VisibilityTimeout"`
	} `json:"Entries"`
}

// queueTimeout learns a queue's VisibilityTimeout from kumo, once.
func (k *Keeper) queueTimeout(r *http.Request, queueURL string) {
	k.mu.Lock()
	_, known := k.timeouts[queueURL]
	k.mu.Unlock()
	if known {
		return
	}
	body, _ := json.Marshal(map[string]any{"QueueUrl": queueURL, "AttributeNames": []string{"VisibilityTimeout"}})
	req := httptest.NewRequestWithContext(r.Context(), http.MethodPost, "/", bytes.NewReader(body))
	req.Header.Set("X-Amz-Target", "AmazonSQS.GetQueueAttributes")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	rec := httptest.NewRecorder()
	k.next.ServeHTTP(rec, req)
	var out struct {
		Attributes map[string]string `json:"Attributes"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
		return
	}
	if t, err := strconv.Atoi(out.Attributes["VisibilityTimeout"]); err == nil {
		k.mu.Lock()
		k.timeouts[queueURL] = t
		k.mu.Unlock()
	}
}

// compactLocked rewrites the journal as one receive entry per message in
// flight.
func (k *Keeper) compactLocked() {
	var buf bytes.Buffer
	for _, m := range k.inflightLocked() {
		line, err := json.Marshal(entry{Op: "receive", Messages: []Message{m}})
		if err != nil {
			return
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if err := k.journal.Close(); err != nil {
		k.log.Error("compact the in-flight journal", "error", err)
	}
	if err := state.WriteFile(k.path, buf.Bytes()); err != nil {
		k.log.Error("compact the in-flight journal", "error", err)
	}
	j, _, _, err := state.OpenJournal(k.path, nil)
	if err != nil {
		k.log.Error("reopen the in-flight journal: in-flight messages are no longer kept", "error", err)
		return
	}
	k.journal = j
	k.lines = len(k.inflight)
}

// Close closes the journal.
func (k *Keeper) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.journal.Close()
}

// MaxDelay is the longest delay SQS allows a message.
const MaxDelay = 15 * time.Minute

// Redeliver sends every message of msgs back to its queue through the
// handler the Keeper forwards to, delayed until its visibility deadline (at
// once if it has passed; MaxDelay at most), with its body and message
// attributes, and records in the journal that it is no longer in flight. A
// queue that no longer exists is skipped with a warning; any other failure
// stops it.
func (k *Keeper) Redeliver(ctx context.Context, msgs []Message) (int, error) {
	n := 0
	for _, m := range msgs {
		secs := 0
		if wait := m.VisibleAt.Sub(k.now()); wait > 0 {
			secs = int(math.Ceil(min(wait, MaxDelay).Seconds()))
		}
		in := map[string]any{"QueueUrl": m.QueueURL, "MessageBody": m.Body, "DelaySeconds": secs}
		if len(m.MessageAttributes) > 0 {
			in["MessageAttributes"] = m.MessageAttributes
		}
		body, _ := json.Marshal(in)
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(body))
		req.Header.Set("X-Amz-Target", "AmazonSQS.SendMessage")
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		rec := httptest.NewRecorder()
		k.next.ServeHTTP(rec, req)
		switch {
		case rec.Code == http.StatusOK:
			n++
		case strings.Contains(rec.Body.String(), "NonExistentQueue"):
			k.log.Warn("a message in flight at the last stop belongs to a queue that is gone", "queue", m.QueueURL, "message_id", m.MessageID)
		default:
			return n, fmt.Errorf("send message %s back to %s: %d %s", m.MessageID, m.QueueURL, rec.Code, strings.TrimSpace(rec.Body.String()))
		}
		e := entry{Op: "delete", QueueURL: m.QueueURL, Receipts: []string{m.ReceiptHandle}}
		line, _ := json.Marshal(e)
		k.mu.Lock()
		k.apply(e)
		err := k.journal.Append(line)
		k.mu.Unlock()
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
