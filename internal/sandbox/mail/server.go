package mail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"

	"github.com/clubdev/club/internal/clock"
	"github.com/clubdev/club/internal/sandbox/sandboxhttp"
)

// DefaultRatePerSecond is the provider's send rate when Options does not set one.
const DefaultRatePerSecond = 100

// Options configure a Server. The zero value is usable.
type Options struct {
	// RatePerSecond is the sustained number of sends per second the
	// provider takes. Zero or less means DefaultRatePerSecond.
	RatePerSecond float64
	// Seed seeds fault sampling; zero picks a random seed. A fault request
	// may carry its own seed.
	Seed uint64
	// Clock is the time source; nil means the system clock.
	Clock clock.Clock
	// Logger receives handler failures; nil means slog.Default().
	Logger *slog.Logger
}

// Server is the mail sandbox. It is an http.Handler; Start also serves it on
// an address of its own.
type Server struct {
	opts    Options
	clock   clock.Clock
	log     *slog.Logger
	handler http.Handler

	// life ends at Shutdown and releases sends waiting on injected latency.
	life context.Context
	end  context.CancelFunc

	mu       sync.Mutex
	messages []Message        // in acceptance order
	byKey    map[string]entry // by idempotency key
	faults   Faults
	rng      *rand.Rand
	bucket   *tokenBucket
	stats    Stats

	listener *sandboxhttp.Listener
}

// entry is what an idempotency key remembers.
type entry struct {
	payloadHash [32]byte
	index       int // into messages
}

// New returns a mail sandbox with no messages and no faults.
func New(opts Options) *Server {
	if opts.RatePerSecond <= 0 {
		opts.RatePerSecond = DefaultRatePerSecond
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{opts: opts, clock: opts.Clock, log: opts.Logger}
	s.life, s.end = context.WithCancel(context.Background())
	s.resetLocked()
	s.handler = s.routes()
	return s
}

func (s *Server) routes() http.Handler {
	m := sandboxhttp.NewMux()
	h := func(f sandboxhttp.HandlerFunc) http.Handler { return sandboxhttp.Handler(s.log, f) }
	m.Handle("POST /v1/messages", h(s.handleSend))
	m.Handle("GET /v1/messages", h(s.handleList))
	m.Handle("POST /_sandbox/faults", h(s.handleSetFaults))
	m.Handle("GET /_sandbox/faults", h(s.handleGetFaults))
	m.Handle("POST /_sandbox/config", h(s.handleSetConfig))
	m.Handle("GET /_sandbox/config", h(s.handleGetConfig))
	m.Handle("GET /_sandbox/stats", h(s.handleStats))
	m.Handle("POST /_sandbox/reset", h(s.handleReset))
	return m
}

// ServeHTTP serves the provider and control APIs.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Start serves the sandbox on addr (e.g. "127.0.0.1:4580"; port 0 picks a
// free one) in the background and returns once the address is bound.
func (s *Server) Start(addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener != nil {
		return errors.New("mail sandbox: already started")
	}
	l, err := sandboxhttp.Listen(addr, s)
	if err != nil {
		return fmt.Errorf("mail sandbox: %w", err)
	}
	s.listener = l
	return nil
}

// URL returns the base URL Start is serving on, or "" before Start.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return ""
	}
	return s.listener.URL()
}

// Shutdown releases sends waiting on injected latency and, if Start was
// called, stops the listener, waiting for requests in flight until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.end()
	s.mu.Lock()
	l := s.listener
	s.listener = nil
	s.mu.Unlock()
	if l == nil {
		return nil
	}
	if err := l.Shutdown(ctx); err != nil {
		return fmt.Errorf("mail sandbox: %w", err)
	}
	return nil
}

// Reset clears messages, keys, faults and counters and restores the
// configured rate limit, like POST /_sandbox/reset.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resetLocked()
}

func (s *Server) resetLocked() {
	s.messages = nil
	s.byKey = map[string]entry{}
	s.faults = Faults{Mode: FaultNone}
	s.rng = newRand(s.opts.Seed)
	s.bucket = newTokenBucket(s.opts.RatePerSecond, s.clock.Now())
	s.stats = Stats{}
}
