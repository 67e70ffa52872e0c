package mail

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/mail"
	"strconv"
	"time"

	"github.com/clubdev/club/internal/sandbox/sandboxhttp"
)

// Message is an accepted message as the provider stores it.
type Message struct {
	MessageID      string    `json:"message_id"`
	To             string    `json:"to"`
	Subject        string    `json:"subject"`
	Text           string    `json:"text"`
	IdempotencyKey string    `json:"idempotency_key"`
	AcceptedAt     time.Time `json:"accepted_at"`
}

// Stats counts what the provider saw since start or reset.
type Stats struct {
	// Accepted is the number of messages stored (sent).
	Accepted int64 `json:"accepted"`
	// Duplicates are sends answered with an existing message_id.
	Duplicates int64 `json:"duplicates"`
	// Conflicts are sends refused because their key was used for another payload.
	Conflicts int64 `json:"conflicts"`
	// RateLimited are sends answered 429.
	RateLimited int64 `json:"rate_limited"`
	// FaultsInjected are sends the active fault was applied to.
	FaultsInjected int64 `json:"faults_injected"`
	// Invalid are sends refused by validation (400, 413).
	Invalid int64 `json:"invalid"`
}

// sendRequest is the body of POST /v1/messages. Its canonical JSON encoding
// (fixed field order, no extra fields) is what the payload hash covers.
type sendRequest struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	Text    string `json:"text"`
}

const (
	maxSubjectLen = 998 // RFC 5322 line length
	maxTextLen    = 32 << 10
)

func (req sendRequest) validate() error {
	switch {
	case req.To == "":
		return sandboxhttp.Invalid("to", "required")
	case !isAddress(req.To):
		return sandboxhttp.Invalid("to", "%q is not an e-mail address", req.To)
	case req.Subject == "":
		return sandboxhttp.Invalid("subject", "required")
	case len(req.Subject) > maxSubjectLen:
		return sandboxhttp.Invalid("subject", "longer than %d bytes", maxSubjectLen)
	case req.Text == "":
		return sandboxhttp.Invalid("text", "required")
	case len(req.Text) > maxTextLen:
		return sandboxhttp.Invalid("text", "longer than %d bytes", maxTextLen)
	}
	return nil
}

// isAddress accepts a bare addr-spec such as ada@example.com.
func isAddress(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Name == "" && a.Address == s
}

func (req sendRequest) hash() [32]byte {
	b, _ := json.Marshal(req) // a struct of strings always encodes
	return sha256.Sum256(b)
}

func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) error {
	req, key, err := s.parseSend(w, r)
	if err != nil {
		s.mu.Lock()
		s.stats.Invalid++
		s.mu.Unlock()
		return err
	}
	if err := s.takeToken(w); err != nil {
		return err
	}

	fault := s.drawFault()
	if fault.LatencyMS > 0 {
		select {
		case <-s.clock.After(time.Duration(fault.LatencyMS) * time.Millisecond):
		case <-r.Context().Done():
			return nil // the client gave up before the provider got to it: nothing sent
		case <-s.life.Done():
			return sandboxhttp.Errorf(http.StatusServiceUnavailable, "shutting_down", "the sandbox is shutting down")
		}
	}
	if fault.Mode == FaultError {
		return sandboxhttp.Errorf(http.StatusServiceUnavailable, "provider_unavailable", "injected fault: provider unavailable")
	}

	msg, replayed, err := s.accept(key, req)
	if err != nil {
		return err
	}
	if fault.Mode == FaultAcceptThenDrop {
		sandboxhttp.Drop(w)
		return nil
	}
	if replayed {
		w.Header().Set(sandboxhttp.ReplayedHeader, "true")
	}
	sandboxhttp.WriteJSON(w, http.StatusAccepted, map[string]string{"message_id": msg.MessageID})
	return nil
}

func (s *Server) parseSend(w http.ResponseWriter, r *http.Request) (sendRequest, string, error) {
	var req sendRequest
	key, err := sandboxhttp.IdempotencyKey(r)
	if err != nil {
		return req, "", err
	}
	if err := sandboxhttp.DecodeJSON(w, r, &req); err != nil {
		return req, "", err
	}
	return req, key, req.validate()
}

// takeToken applies the rate limit, answering 429 with Retry-After.
func (s *Server) takeToken(w http.ResponseWriter) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok, wait := s.bucket.take(s.clock.Now())
	if ok {
		return nil
	}
	s.stats.RateLimited++
	w.Header().Set("Retry-After", strconv.FormatInt(retryAfterSeconds(wait), 10))
	return sandboxhttp.Errorf(http.StatusTooManyRequests, "rate_limited", "more than %g messages per second", s.bucket.rate)
}

// accept stores the message for key, or returns the one already stored for
// it (replayed) if the payload is the same.
func (s *Server) accept(key string, req sendRequest) (msg Message, replayed bool, err error) {
	h := req.hash()
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byKey[key]; ok {
		if e.payloadHash != h {
			s.stats.Conflicts++
			return Message{}, false, sandboxhttp.Errorf(http.StatusConflict, "idempotency_key_reused",
				"Idempotency-Key %q was used for a different message", key)
		}
		s.stats.Duplicates++
		return s.messages[e.index], true, nil
	}
	msg = Message{
		MessageID:      sandboxhttp.NewID("msg"),
		To:             req.To,
		Subject:        req.Subject,
		Text:           req.Text,
		IdempotencyKey: key,
		AcceptedAt:     s.clock.Now().UTC(),
	}
	s.byKey[key] = entry{payloadHash: h, index: len(s.messages)}
	s.messages = append(s.messages, msg)
	s.stats.Accepted++
	return msg, false, nil
}

// Messages returns the accepted messages in acceptance order, only those to
// the given address when to is not empty.
func (s *Server) Messages(to string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []Message{}
	for _, m := range s.messages {
		if to == "" || m.To == to {
			out = append(out, m)
		}
	}
	return out
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) error {
	sandboxhttp.WriteJSON(w, http.StatusOK, map[string][]Message{"messages": s.Messages(r.URL.Query().Get("to"))})
	return nil
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (s *Server) handleStats(w http.ResponseWriter, _ *http.Request) error {
	sandboxhttp.WriteJSON(w, http.StatusOK, s.Stats())
	return nil
}

func (s *Server) handleReset(w http.ResponseWriter, _ *http.Request) error {
	s.Reset()
	sandboxhttp.WriteJSON(w, http.StatusOK, map[string]string{"status": "reset"})
	return nil
}
