package ddbfidelity

import (
	"maps"
	"sync"
)

// Stats count what the fidelity layer did: requests refused by feature, and
// answers corrected by kind. /_club/stats serves them (endpoint.dynamodb_fidelity).
type Stats struct {
	Refused   map[string]int64 `json:"refused"`
	Corrected map[string]int64 `json:"corrected"`
}

type counters struct {
	mu        sync.Mutex
	refused   map[string]int64
	corrected map[string]int64
}

func newCounters() *counters {
	return &counters{refused: map[string]int64{}, corrected: map[string]int64{}}
}

func (c *counters) refuse(feature string) {
	c.mu.Lock()
	c.refused[feature]++
	c.mu.Unlock()
}

func (c *counters) correct(kind string) {
	c.mu.Lock()
	c.corrected[kind]++
	c.mu.Unlock()
}

// Stats returns a snapshot of the counters.
func (h *Handler) Stats() Stats {
	h.stats.mu.Lock()
	defer h.stats.mu.Unlock()
	return Stats{Refused: maps.Clone(h.stats.refused), Corrected: maps.Clone(h.stats.corrected)}
}
