package mail

import (
	"math"
	"net/http"
	"time"

	"github.com/clubdev/club/internal/sandbox/sandboxhttp"
)

// tokenBucket is a rate limiter on an injected clock. It is not safe for
// concurrent use; the Server's lock guards it.
type tokenBucket struct {
	rate     float64 // tokens per second
	capacity float64
	tokens   float64
	last     time.Time
}

// newTokenBucket returns a full bucket holding one second's worth of tokens
// (at least one).
func newTokenBucket(rate float64, now time.Time) *tokenBucket {
	capacity := math.Max(1, rate)
	return &tokenBucket{rate: rate, capacity: capacity, tokens: capacity, last: now}
}

// take removes a token if one is available; otherwise it reports how long
// until one will be.
func (b *tokenBucket) take(now time.Time) (ok bool, wait time.Duration) {
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = math.Min(b.capacity, b.tokens+elapsed.Seconds()*b.rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}

// retryAfterSeconds renders a wait as a Retry-After value: whole seconds,
// rounded up, at least 1.
func retryAfterSeconds(wait time.Duration) int64 {
	return max(1, int64(math.Ceil(wait.Seconds())))
}

// Config is the provider's tunable behaviour.
type Config struct {
	RatePerSecond float64 `json:"rate_per_second"`
}

// SetRate changes the rate limit, like POST /_sandbox/config, and refills
// the bucket to the new capacity.
func (s *Server) SetRate(perSecond float64) error {
	if !(perSecond > 0) || math.IsInf(perSecond, 0) {
		return sandboxhttp.Invalid("rate_per_second", "must be a positive number")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bucket = newTokenBucket(perSecond, s.clock.Now())
	return nil
}

func (s *Server) handleSetConfig(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		RatePerSecond *float64 `json:"rate_per_second"`
	}
	if err := sandboxhttp.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.RatePerSecond == nil {
		return sandboxhttp.Invalid("rate_per_second", "required")
	}
	if err := s.SetRate(*req.RatePerSecond); err != nil {
		return err
	}
	return s.handleGetConfig(w, r)
}

func (s *Server) handleGetConfig(w http.ResponseWriter, _ *http.Request) error {
	s.mu.Lock()
	c := Config{RatePerSecond: s.bucket.rate}
	s.mu.Unlock()
	sandboxhttp.WriteJSON(w, http.StatusOK, c)
	return nil
}
