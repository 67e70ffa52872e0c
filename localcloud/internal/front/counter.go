package front

import (
	"encoding/json"
	"net/http"
	"sort"
	"sync"
)

// Counter counts AWS API requests by service and operation.
type Counter struct {
	mu     sync.Mutex
	counts map[Op]int64
}

// Op names one AWS API operation, e.g. {"dynamodb", "TransactWriteItems"}.
type Op struct {
	Service   string `json:"service"`
	Operation string `json:"operation"`
}

// OpCount is one row of a Snapshot.
type OpCount struct {
	Op
	Count int64 `json:"count"`
}

// NewCounter returns an empty counter.
func NewCounter() *Counter { return &Counter{counts: map[Op]int64{}} }

// Add counts one request.
func (c *Counter) Add(op Op) {
	c.mu.Lock()
	c.counts[op]++
	c.mu.Unlock()
}

// Snapshot returns the counts sorted by service and operation.
func (c *Counter) Snapshot() []OpCount {
	c.mu.Lock()
	out := make([]OpCount, 0, len(c.counts))
	for op, n := range c.counts {
		out = append(out, OpCount{Op: op, Count: n})
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Service != out[j].Service {
			return out[i].Service < out[j].Service
		}
		return out[i].Operation < out[j].Operation
	})
	return out
}

// Reset sets every count to zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	c.counts = map[Op]int64{}
	c.mu.Unlock()
}

// ServeHTTP answers GET with the snapshot as JSON {"requests":[...]} and
// DELETE by resetting the counter.
func (c *Counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"requests": c.Snapshot()})
	case http.MethodDelete:
		c.Reset()
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}
