package mail

import (
	"encoding/hex"
	"fmt"
)

// State is what the mail sandbox keeps across a restart of the local cloud
// (`make run`): the messages it accepted, the idempotency keys that point
// at them, the faults in force (an outage stays on until it is switched
// off), the rate limit and the counters.
type State struct {
	Messages      []Message        `json:"messages"`
	Keys          map[string]Keyed `json:"keys"`
	Faults        Faults           `json:"faults"`
	RatePerSecond float64          `json:"rate_per_second"`
	Stats         Stats            `json:"stats"`
}

// Keyed is what an idempotency key remembers, as State keeps it.
type Keyed struct {
	PayloadHash string `json:"payload_hash"` // hex SHA-256
	Index       int    `json:"index"`        // into Messages
}

// State returns the sandbox's state.
func (s *Server) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := State{
		Messages: append([]Message(nil), s.messages...), Keys: make(map[string]Keyed, len(s.byKey)),
		Faults: s.faults, RatePerSecond: s.bucket.rate, Stats: s.stats,
	}
	for k, e := range s.byKey {
		st.Keys[k] = Keyed{PayloadHash: hex.EncodeToString(e.payloadHash[:]), Index: e.index}
	}
	return st
}

// Restore replaces the sandbox's state with st, as State returned it.
func (s *Server) Restore(st State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetLocked()
	s.messages = append([]Message(nil), st.Messages...)
	for k, e := range st.Keys {
		var h [32]byte
		if b, err := hex.DecodeString(e.PayloadHash); err == nil && len(b) == len(h) && e.Index >= 0 && e.Index < len(s.messages) {
			copy(h[:], b)
			s.byKey[k] = entry{payloadHash: h, index: e.Index}
		}
	}
	if st.Faults.Mode != "" {
		s.faults = st.Faults
	}
	if st.RatePerSecond > 0 {
		s.bucket = newTokenBucket(st.RatePerSecond, s.clock.Now())
	}
	s.stats = st.Stats
}

// Revision changes whenever State would (every send is counted in the
// stats; faults and the rate are in it): a cheap way to tell whether the
// state must be written again.
func (s *Server) Revision() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%d %+v %+v %g", len(s.messages), s.stats, s.faults, s.bucket.rate)
}
