package mail

import (
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/clubdev/club/internal/sandbox/sandboxhttp"
)

// FaultMode names how a faulted send misbehaves.
type FaultMode string

// Fault modes, as accepted by POST /_sandbox/faults.
const (
	// FaultNone: every send behaves.
	FaultNone FaultMode = "none"
	// FaultError: answer 503 and store nothing.
	FaultError FaultMode = "error"
	// FaultSlow: wait LatencyMS, then behave.
	FaultSlow FaultMode = "slow"
	// FaultAcceptThenDrop: store the message, then close the connection
	// without answering.
	FaultAcceptThenDrop FaultMode = "accept_then_drop"
)

// Faults is the active fault setting.
type Faults struct {
	Mode FaultMode `json:"mode"`
	// Rate is the probability (0..1) that a send is faulted.
	Rate float64 `json:"rate"`
	// LatencyMS is waited before a faulted send is handled.
	LatencyMS int64 `json:"latency_ms"`
}

// faultsRequest is the body of POST /_sandbox/faults; pointers tell an
// absent field from a zero one.
type faultsRequest struct {
	Mode      FaultMode `json:"mode"`
	Rate      *float64  `json:"rate"`
	LatencyMS int64     `json:"latency_ms"`
	Seed      *uint64   `json:"seed"`
}

// maxLatency bounds injected latency so a mistyped value cannot wedge a test run.
const maxLatency = 5 * time.Minute

func (req faultsRequest) validate() (Faults, error) {
	f := Faults{Mode: req.Mode, Rate: 1, LatencyMS: req.LatencyMS}
	if req.Rate != nil {
		f.Rate = *req.Rate
	}
	switch f.Mode {
	case FaultNone, FaultError, FaultSlow, FaultAcceptThenDrop:
	case "":
		return Faults{}, sandboxhttp.Invalid("mode", "required")
	default:
		return Faults{}, sandboxhttp.Invalid("mode", "%q is not one of none, error, slow, accept_then_drop", f.Mode)
	}
	if f.Rate < 0 || f.Rate > 1 {
		return Faults{}, sandboxhttp.Invalid("rate", "must be between 0 and 1")
	}
	if f.LatencyMS < 0 || time.Duration(f.LatencyMS)*time.Millisecond > maxLatency {
		return Faults{}, sandboxhttp.Invalid("latency_ms", "must be between 0 and %d", maxLatency.Milliseconds())
	}
	if f.Mode == FaultSlow && f.LatencyMS == 0 {
		return Faults{}, sandboxhttp.Invalid("latency_ms", "must be positive for mode slow")
	}
	return f, nil
}

// SetFaults switches the fault setting, like POST /_sandbox/faults. A
// non-nil seed reseeds the sampling PRNG.
func (s *Server) SetFaults(f Faults, seed *uint64) error {
	_, err := s.applyFaults(faultsRequest{Mode: f.Mode, Rate: &f.Rate, LatencyMS: f.LatencyMS, Seed: seed})
	return err
}

func (s *Server) applyFaults(req faultsRequest) (Faults, error) {
	f, err := req.validate()
	if err != nil {
		return Faults{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
	if req.Seed != nil {
		s.rng = newRand(*req.Seed)
	}
	return f, nil
}

// drawFault decides whether this send is faulted and returns the fault to
// apply (Mode FaultNone when it is not).
func (s *Server) drawFault() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults
	if f.Mode == FaultNone || f.Rate == 0 {
		return Faults{Mode: FaultNone}
	}
	// Rate 1 draws too, so the PRNG sequence depends only on the number of
	// sends, not on the rates used.
	if s.rng.Float64() >= f.Rate {
		return Faults{Mode: FaultNone}
	}
	s.stats.FaultsInjected++
	return f
}

func newRand(seed uint64) *rand.Rand {
	if seed == 0 {
		seed = rand.Uint64()
	}
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

func (s *Server) handleSetFaults(w http.ResponseWriter, r *http.Request) error {
	var req faultsRequest
	if err := sandboxhttp.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	f, err := s.applyFaults(req)
	if err != nil {
		return err
	}
	sandboxhttp.WriteJSON(w, http.StatusOK, f)
	return nil
}

func (s *Server) handleGetFaults(w http.ResponseWriter, _ *http.Request) error {
	s.mu.Lock()
	f := s.faults
	s.mu.Unlock()
	sandboxhttp.WriteJSON(w, http.StatusOK, f)
	return nil
}
