package payment

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/clubdev/club/internal/sandbox/sandboxhttp"
)

// Status is the state of a payment or a refund.
type Status string

// Statuses. pending is the only one that changes.
const (
	StatusPending   Status = "pending"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
)

// Payment is a payment as the provider reports it.
type Payment struct {
	PaymentID   string    `json:"payment_id"`
	Status      Status    `json:"status"`
	Reference   string    `json:"reference"`
	AmountCents int64     `json:"amount_cents"`
	Currency    string    `json:"currency"`
	CheckoutURL string    `json:"checkout_url"`
	CreatedAt   time.Time `json:"created_at"`
}

// paymentRequest is the body of POST /v1/payments. Its canonical JSON
// encoding is what the payload hash covers.
type paymentRequest struct {
	AmountCents *int64 `json:"amount_cents"`
	Currency    string `json:"currency"`
	Reference   string `json:"reference"`
}

const maxAmountCents = 100_000_000 // a million in major units: more is a bug, not a purchase

func (req paymentRequest) validate() error {
	switch {
	case req.AmountCents == nil:
		return sandboxhttp.Invalid("amount_cents", "required")
	case *req.AmountCents <= 0 || *req.AmountCents > maxAmountCents:
		return sandboxhttp.Invalid("amount_cents", "must be between 1 and %d", int64(maxAmountCents))
	case !isCurrency(req.Currency):
		return sandboxhttp.Invalid("currency", "must be a three-letter upper-case ISO 4217 code")
	case req.Reference == "":
		return sandboxhttp.Invalid("reference", "required")
	case len(req.Reference) > 255:
		return sandboxhttp.Invalid("reference", "longer than 255 bytes")
	}
	return nil
}

func isCurrency(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := range 3 {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// payloadHash is the SHA-256 of v's JSON encoding; v must be a struct,
// whose fields encode in a fixed order.
func payloadHash(v any) [32]byte {
	b, _ := json.Marshal(v) // structs of strings and numbers always encode
	return sha256.Sum256(b)
}

func (s *Server) handleCreatePayment(w http.ResponseWriter, r *http.Request) error {
	key, err := sandboxhttp.IdempotencyKey(r)
	if err != nil {
		return err
	}
	var req paymentRequest
	if err := sandboxhttp.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := req.validate(); err != nil {
		return err
	}
	p, replayed, err := s.createPayment(key, req, baseURL(r))
	if err != nil {
		return err
	}
	if replayed {
		w.Header().Set(sandboxhttp.ReplayedHeader, "true")
	}
	sandboxhttp.WriteJSON(w, http.StatusCreated, p)
	return nil
}

func (s *Server) createPayment(key string, req paymentRequest, base string) (Payment, bool, error) {
	h := payloadHash(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.paymentKeys[key]; ok {
		if k.payloadHash != h {
			return Payment{}, false, sandboxhttp.Errorf(http.StatusConflict, "idempotency_key_reused",
				"Idempotency-Key %q was used for a different payment", key)
		}
		return *s.payments[k.id], true, nil
	}
	id := sandboxhttp.NewID("pay")
	p := &Payment{
		PaymentID:   id,
		Status:      StatusPending,
		Reference:   req.Reference,
		AmountCents: *req.AmountCents,
		Currency:    req.Currency,
		CheckoutURL: base + "/checkout/" + id,
		CreatedAt:   s.clock.Now().UTC(),
	}
	s.payments[id] = p
	s.paymentKeys[key] = keyed{payloadHash: h, id: id}
	return *p, false, nil
}

// baseURL is the address the client used to reach the sandbox, so that
// checkout links work whatever address the sandbox was started on.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// Payment returns the payment with the given id.
func (s *Server) Payment(id string) (Payment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.payments[id]
	if !ok {
		return Payment{}, false
	}
	return *p, true
}

// Payments returns the payments whose reference is the given one (every
// payment when it is empty), oldest first: how many payments the provider
// holds for one purchase.
func (s *Server) Payments(reference string) []Payment {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []Payment{}
	for _, p := range s.payments {
		if reference == "" || p.Reference == reference {
			out = append(out, *p)
		}
	}
	slices.SortFunc(out, func(a, b Payment) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.PaymentID, b.PaymentID)
	})
	return out
}

func (s *Server) handleListPayments(w http.ResponseWriter, r *http.Request) error {
	sandboxhttp.WriteJSON(w, http.StatusOK, map[string][]Payment{"payments": s.Payments(r.URL.Query().Get("reference"))})
	return nil
}

func (s *Server) handleGetPayment(w http.ResponseWriter, r *http.Request) error {
	p, ok := s.Payment(r.PathValue("payment_id"))
	if !ok {
		return paymentNotFound(r.PathValue("payment_id"))
	}
	sandboxhttp.WriteJSON(w, http.StatusOK, p)
	return nil
}

func paymentNotFound(id string) error {
	return sandboxhttp.Errorf(http.StatusNotFound, "payment_not_found", "no payment %q", id)
}

// SettlePayment moves a pending payment to succeeded or failed and sends
// the matching webhook, as the control endpoints do. Settling a payment to
// the status it already has changes nothing and sends nothing.
func (s *Server) SettlePayment(id string, to Status) (Payment, error) {
	if to != StatusSucceeded && to != StatusFailed {
		return Payment{}, sandboxhttp.Invalid("outcome", "must be succeed or fail")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.payments[id]
	if !ok {
		return Payment{}, paymentNotFound(id)
	}
	switch p.Status {
	case to:
		return *p, nil
	case StatusPending:
		p.Status = to
		typ := EventPaymentSucceeded
		if to == StatusFailed {
			typ = EventPaymentFailed
		}
		s.raiseLocked(Event{
			Type:        typ,
			PaymentID:   p.PaymentID,
			Reference:   p.Reference,
			AmountCents: p.AmountCents,
		})
		return *p, nil
	default:
		return Payment{}, sandboxhttp.Errorf(http.StatusConflict, "invalid_transition",
			"payment %s is %s and cannot become %s", id, p.Status, to)
	}
}

func (s *Server) handleSettlePayment(w http.ResponseWriter, r *http.Request) error {
	to, err := outcome(r)
	if err != nil {
		return err
	}
	p, err := s.SettlePayment(r.PathValue("payment_id"), to)
	if err != nil {
		return err
	}
	sandboxhttp.WriteJSON(w, http.StatusOK, p)
	return nil
}

// outcome reads the {outcome} path segment of a control endpoint.
func outcome(r *http.Request) (Status, error) {
	switch r.PathValue("outcome") {
	case "succeed":
		return StatusSucceeded, nil
	case "fail":
		return StatusFailed, nil
	}
	return "", sandboxhttp.Errorf(http.StatusNotFound, "not_found", "%s: the outcome must be succeed or fail", r.URL.Path)
}
