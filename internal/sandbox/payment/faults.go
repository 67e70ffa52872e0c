package payment

import (
	"net/http"
	"time"

	"github.com/clubdev/club/internal/sandbox/sandboxhttp"
)

// FaultMode names how the provider misbehaves.
type FaultMode string

// Fault modes, as accepted by POST /_sandbox/faults.
const (
	// FaultNone: the provider behaves.
	FaultNone FaultMode = "none"
	// FaultRefundUnavailable: every /v1/refunds call answers 503.
	FaultRefundUnavailable FaultMode = "refund_unavailable"
	// FaultNoResponse: /v1 calls take effect but are never answered.
	FaultNoResponse FaultMode = "no_response"
	// FaultDuplicateWebhooks: every event is delivered twice.
	FaultDuplicateWebhooks FaultMode = "duplicate_webhooks"
	// FaultDelayWebhooks: every event waits DelayMS before delivery.
	FaultDelayWebhooks FaultMode = "delay_webhooks"
	// FaultHoldRefunds: a refund created while it is in force stays
	// pending until settled through the control API, as a refund the bank
	// takes days over does.
	FaultHoldRefunds FaultMode = "hold_refunds"
)

// Faults is the active fault setting.
type Faults struct {
	Mode    FaultMode `json:"mode"`
	DelayMS int64     `json:"delay_ms"`
}

// maxWebhookDelay bounds delay_webhooks so a mistyped value cannot wedge a run.
const maxWebhookDelay = time.Hour

func (f Faults) validate() error {
	switch f.Mode {
	case FaultNone, FaultRefundUnavailable, FaultNoResponse, FaultDuplicateWebhooks, FaultDelayWebhooks, FaultHoldRefunds:
	case "":
		return sandboxhttp.Invalid("mode", "required")
	default:
		return sandboxhttp.Invalid("mode", "%q is not one of none, refund_unavailable, no_response, duplicate_webhooks, delay_webhooks, hold_refunds", f.Mode)
	}
	if f.DelayMS < 0 || time.Duration(f.DelayMS)*time.Millisecond > maxWebhookDelay {
		return sandboxhttp.Invalid("delay_ms", "must be between 0 and %d", maxWebhookDelay.Milliseconds())
	}
	if f.Mode == FaultDelayWebhooks && f.DelayMS == 0 {
		return sandboxhttp.Invalid("delay_ms", "must be positive for mode delay_webhooks")
	}
	return nil
}

// SetFaults switches the fault setting, like POST /_sandbox/faults.
func (s *Server) SetFaults(f Faults) error {
	if err := f.validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
	return nil
}

func (s *Server) currentFaults() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults
}

func (s *Server) handleSetFaults(w http.ResponseWriter, r *http.Request) error {
	var f Faults
	if err := sandboxhttp.DecodeJSON(w, r, &f); err != nil {
		return err
	}
	if err := s.SetFaults(f); err != nil {
		return err
	}
	sandboxhttp.WriteJSON(w, http.StatusOK, f)
	return nil
}

func (s *Server) handleGetFaults(w http.ResponseWriter, _ *http.Request) error {
	sandboxhttp.WriteJSON(w, http.StatusOK, s.currentFaults())
	return nil
}

// provider wraps a /v1 handler with the faults that affect calls to the
// provider. refunds marks the refund endpoints.
func (s *Server) provider(refunds bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		mode, gen := s.faults.Mode, s.gen
		s.mu.Unlock()

		switch {
		case mode == FaultRefundUnavailable && refunds:
			sandboxhttp.WriteError(w, http.StatusServiceUnavailable, "refund_unavailable", "injected fault: refunds are unavailable")
		case mode == FaultNoResponse:
			// Do the work, throw the answer away, and keep the caller
			// waiting: the effect exists but the caller cannot know.
			next.ServeHTTP(discard{header: http.Header{}}, r)
			select {
			case <-r.Context().Done():
			case <-gen.ctx.Done():
			case <-s.clock.After(s.opts.MaxHang):
			}
			sandboxhttp.Drop(w)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// discard is a ResponseWriter that drops the answer.
type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}
