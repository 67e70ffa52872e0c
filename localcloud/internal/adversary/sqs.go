package adversary

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
)

// fifo reports whether a queue URL names a FIFO queue, whose order and
// exactly-once processing SQS does keep: the SQS behaviours leave it alone.
func fifo(queueURL string) bool { return strings.HasSuffix(queueURL, ".fifo") }

// receive carries out a ReceiveMessage: SQSPartialReceive asks for fewer
// messages than the caller did, SQSReorder shuffles what comes back, and the
// receipt handles are remembered for SQSRedeliver.
func (a *Adversary) receive(next http.Handler, c *call) *answer {
	var in map[string]json.RawMessage
	if json.Unmarshal(c.body, &in) != nil {
		return forward(next, c.r, c.body)
	}
	var queueURL string
	_ = json.Unmarshal(in["QueueUrl"], &queueURL)
	if fifo(queueURL) {
		return forward(next, c.r, c.body)
	}
	body := c.body
	var asked int
	_ = json.Unmarshal(in["MaxNumberOfMessages"], &asked)
	if asked > 1 && a.Decide(SQSPartialReceive) {
		in["MaxNumberOfMessages"], _ = json.Marshal(1 + a.Pick(SQSPartialReceive, asked-1))
		body, _ = json.Marshal(in)
		a.Count(SQSPartialReceive)
	}
	ans := forward(next, c.r, body)
	if !ans.ok() {
		return ans
	}
	var out map[string]json.RawMessage
	var msgs []json.RawMessage
	if json.Unmarshal(ans.body, &out) != nil || json.Unmarshal(out["Messages"], &msgs) != nil || len(msgs) == 0 {
		return ans
	}
	for _, m := range msgs {
		var ids struct{ MessageId, ReceiptHandle string }
		if json.Unmarshal(m, &ids) == nil {
			a.handles.add(ids.ReceiptHandle, ids.MessageId)
		}
	}
	if len(msgs) > 1 && a.Decide(SQSReorder) {
		shuffled := make([]json.RawMessage, 0, len(msgs))
		rest := append([]json.RawMessage(nil), msgs...)
		for len(rest) > 0 {
			i := a.Pick(SQSReorder, len(rest))
			shuffled = append(shuffled, rest[i])
			rest = append(rest[:i], rest[i+1:]...)
		}
		if string(shuffled[0]) == string(msgs[0]) { // keep it a change of order
			shuffled[0], shuffled[len(shuffled)-1] = shuffled[len(shuffled)-1], shuffled[0]
		}
		out["Messages"], _ = json.Marshal(shuffled)
		ans.body, _ = json.Marshal(out)
		a.Count(SQSReorder)
	}
	return ans
}

// delete carries out a DeleteMessage or DeleteMessageBatch, except for the
// messages SQSRedeliver keeps: those are acknowledged and made visible again
// instead, as when a copy of the message on a server that was unavailable
// survives the delete. Each message is kept at most once.
func (a *Adversary) delete(next http.Handler, c *call) *answer {
	var in struct {
		QueueUrl      string
		ReceiptHandle string
		Entries       []struct{ Id, ReceiptHandle string }
	}
	if json.Unmarshal(c.body, &in) != nil || fifo(in.QueueUrl) {
		return forward(next, c.r, c.body)
	}
	if c.operation == "DeleteMessage" {
		if a.redeliver(c, in.QueueUrl, in.ReceiptHandle) {
			return &answer{status: http.StatusOK, header: jsonHeader(), body: []byte("{}")}
		}
		return forward(next, c.r, c.body)
	}
	var kept []map[string]string
	var rest []json.RawMessage
	var raw struct{ Entries []json.RawMessage }
	_ = json.Unmarshal(c.body, &raw)
	for i, e := range in.Entries {
		if i < len(raw.Entries) && a.redeliver(c, in.QueueUrl, e.ReceiptHandle) {
			kept = append(kept, map[string]string{"Id": e.Id})
			continue
		}
		if i < len(raw.Entries) {
			rest = append(rest, raw.Entries[i])
		}
	}
	if len(kept) == 0 {
		return forward(next, c.r, c.body)
	}
	out := map[string]any{"Successful": kept, "Failed": []any{}}
	if len(rest) > 0 {
		body, _ := json.Marshal(map[string]any{"QueueUrl": in.QueueUrl, "Entries": rest})
		ans := forward(next, c.r, body)
		if !ans.ok() {
			return ans
		}
		var got struct {
			Successful []map[string]string
			Failed     []json.RawMessage
		}
		_ = json.Unmarshal(ans.body, &got)
		out["Successful"] = append(kept, got.Successful...)
		if len(got.Failed) > 0 {
			out["Failed"] = got.Failed
		}
	}
	body, _ := json.Marshal(out)
	return &answer{status: http.StatusOK, header: jsonHeader(), body: body}
}

// redeliver decides whether the message of handle survives its delete and,
// if so, makes it visible at once.
func (a *Adversary) redeliver(c *call, queueURL, handle string) bool {
	if handle == "" || !a.handles.redeliverable(handle) || !a.Decide(SQSRedeliver) {
		return false
	}
	body, _ := json.Marshal(map[string]any{"QueueUrl": queueURL, "ReceiptHandle": handle, "VisibilityTimeout": 0})
	if ans := forward(a.engine, request(c.r, "AmazonSQS.ChangeMessageVisibility", body), body); !ans.ok() {
		return false // the handle is stale: the delete goes through as asked
	}
	a.handles.redelivered(handle)
	a.Count(SQSRedeliver)
	return true
}

func jsonHeader() http.Header {
	return http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}}
}

// maxHandles bounds the receipt handles remembered; a message is deleted
// within its visibility timeout, long before this many later receives.
const maxHandles = 200000

// handles maps receipt handles to message ids, and remembers the messages
// SQSRedeliver kept once.
type handles struct {
	mu    sync.Mutex
	ids   map[string]string
	order []string
	kept  map[string]bool
}

func newHandles() *handles { return &handles{ids: map[string]string{}, kept: map[string]bool{}} }

func (h *handles) add(handle, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ids[handle] = id
	h.order = append(h.order, handle)
	if len(h.order) > maxHandles {
		delete(h.ids, h.order[0])
		h.order = h.order[1:]
	}
}

func (h *handles) redeliverable(handle string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	id, ok := h.ids[handle]
	return ok && !h.kept[id]
}

func (h *handles) redelivered(handle string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kept[h.ids[handle]] = true
}
