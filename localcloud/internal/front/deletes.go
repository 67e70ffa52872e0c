package front

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
)

// deletedHandles makes SQS deletes idempotent as SQS's are: deleting a
// message again with the receipt handle that deleted it succeeds. kumo
// answers ReceiptHandleIsInvalid instead, which turns an SDK retry after a
// lost answer (the first attempt deleted, its answer never arrived) into a
// failure. The front remembers the handles kumo accepted and, for those
// only, turns kumo's ReceiptHandleIsInvalid into success. A handle kumo
// never accepted still fails.
type deletedHandles struct {
	mu      sync.Mutex
	handles map[string]struct{}
	order   []string
}

// maxDeletedHandles bounds the memory: a retry follows its attempt within
// seconds, long before this many later deletes.
const maxDeletedHandles = 100000

func newDeletedHandles() *deletedHandles {
	return &deletedHandles{handles: map[string]struct{}{}}
}

func (d *deletedHandles) add(h string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.handles[h]; ok {
		return
	}
	d.handles[h] = struct{}{}
	d.order = append(d.order, h)
	if len(d.order) > maxDeletedHandles {
		delete(d.handles, d.order[0])
		d.order = d.order[1:]
	}
}

func (d *deletedHandles) has(h string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.handles[h]
	return ok
}

// serveDelete passes a JSON-protocol DeleteMessage or DeleteMessageBatch to
// next and answers with kumo's answer, corrected for repeated deletes.
func (d *deletedHandles) serveDelete(next http.Handler, w http.ResponseWriter, r *http.Request, batch bool) {
	body, ok := peekBody(w, r)
	if !ok {
		return
	}
	var in struct {
		ReceiptHandle string
		Entries       []struct{ Id, ReceiptHandle string }
	}
	_ = json.Unmarshal(body, &in) // a malformed call is kumo's to refuse
	rec := &bufferedAnswer{header: http.Header{}}
	next.ServeHTTP(rec, r)
	status, out := rec.status(), rec.body.Bytes()

	if batch {
		out = d.fixBatch(in.Entries, status, out)
	} else if in.ReceiptHandle != "" {
		switch {
		case status == http.StatusOK:
			d.add(in.ReceiptHandle)
		case bytes.Contains(out, []byte("ReceiptHandleIsInvalid")) && d.has(in.ReceiptHandle):
			status, out = http.StatusOK, []byte("{}")
		}
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// fixBatch records the handles of the successful entries and moves failed
// entries whose handle was deleted before to the successful ones.
func (d *deletedHandles) fixBatch(entries []struct{ Id, ReceiptHandle string }, status int, out []byte) []byte {
	if status != http.StatusOK {
		return out
	}
	var res struct {
		Successful []map[string]any `json:"Successful"`
		Failed     []map[string]any `json:"Failed"`
	}
	if json.Unmarshal(out, &res) != nil {
		return out
	}
	handle := make(map[string]string, len(entries))
	for _, e := range entries {
		handle[e.Id] = e.ReceiptHandle
	}
	for _, s := range res.Successful {
		if id, ok := s["Id"].(string); ok && handle[id] != "" {
			d.add(handle[id])
		}
	}
	changed := false
	kept := res.Failed[:0]
	for _, f := range res.Failed {
		id, _ := f["Id"].(string)
		if code, _ := f["Code"].(string); code == "ReceiptHandleIsInvalid" && handle[id] != "" && d.has(handle[id]) {
			res.Successful = append(res.Successful, map[string]any{"Id": id})
			changed = true
			continue
		}
		kept = append(kept, f)
	}
	if !changed {
		return out
	}
	res.Failed = kept
	if res.Failed == nil {
		res.Failed = []map[string]any{}
	}
	fixed, err := json.Marshal(res)
	if err != nil {
		return out
	}
	return fixed
}

// bufferedAnswer keeps kumo's whole answer so that it can be corrected.
type bufferedAnswer struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *bufferedAnswer) Header() http.Header         { return b.header }
func (b *bufferedAnswer) WriteHeader(code int)        { b.code = code }
func (b *bufferedAnswer) Write(p []byte) (int, error) { return b.body.Write(p) }

func (b *bufferedAnswer) status() int {
	if b.code == 0 {
		return http.StatusOK
	}
	return b.code
}
