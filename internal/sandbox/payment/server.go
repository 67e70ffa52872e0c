package payment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/clubdev/club/internal/clock"
	"github.com/clubdev/club/internal/sandbox/sandboxhttp"
)

// Defaults for the zero Options.
const (
	DefaultRefundDelay     = time.Second
	DefaultWebhookAttempts = 5
	DefaultWebhookBackoff  = 500 * time.Millisecond
	DefaultWebhookTimeout  = 10 * time.Second
	DefaultMaxHang         = 30 * time.Second
)

// Options configure a Server. The zero value is usable, but sends no
// webhooks (events are still recorded).
type Options struct {
	// WebhookURL receives every event, e.g. http://127.0.0.1:3000/webhooks/payments.
	WebhookURL string
	// WebhookSecret is the shared HMAC key for X-Sandbox-Signature.
	WebhookSecret []byte
	// RefundDelay is how long a refund stays pending before it succeeds.
	RefundDelay time.Duration
	// WebhookAttempts bounds deliveries of one event (of one copy, with
	// duplicate_webhooks).
	WebhookAttempts int
	// WebhookBackoff is the wait before the first retry; each next wait
	// doubles.
	WebhookBackoff time.Duration
	// WebhookTimeout bounds one delivery attempt.
	WebhookTimeout time.Duration
	// MaxHang bounds how long no_response withholds an answer.
	MaxHang time.Duration
	// Clock is the time source; nil means the system clock.
	Clock clock.Clock
	// HTTPClient delivers webhooks; nil means a client of its own.
	HTTPClient *http.Client
	// Logger receives delivery failures; nil means slog.Default().
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.RefundDelay <= 0 {
		o.RefundDelay = DefaultRefundDelay
	}
	if o.WebhookAttempts <= 0 {
		o.WebhookAttempts = DefaultWebhookAttempts
	}
	if o.WebhookBackoff <= 0 {
		o.WebhookBackoff = DefaultWebhookBackoff
	}
	if o.WebhookTimeout <= 0 {
		o.WebhookTimeout = DefaultWebhookTimeout
	}
	if o.MaxHang <= 0 {
		o.MaxHang = DefaultMaxHang
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Server is the payment sandbox. It is an http.Handler; Start also serves
// it on an address of its own.
type Server struct {
	opts    Options
	clock   clock.Clock
	log     *slog.Logger
	handler http.Handler

	mu          sync.Mutex
	gen         *generation
	payments    map[string]*Payment
	refunds     map[string]*Refund
	refundOrder []string // refund ids in creation order
	paymentKeys map[string]keyed
	refundKeys  map[string]keyed
	events      []*eventRecord
	faults      Faults
	closed      bool

	listener *sandboxhttp.Listener
}

// keyed is what an idempotency key remembers.
type keyed struct {
	payloadHash [32]byte
	id          string
}

// generation is the life of the state between resets. Background work
// (refund timers, webhook deliveries, withheld answers) belongs to one
// generation and stops when it is cancelled.
type generation struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newGeneration() *generation {
	g := &generation{}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	return g
}

// goLocked runs f in the background as part of the current generation,
// unless the server is shut down. The caller holds s.mu.
func (s *Server) goLocked(f func(ctx context.Context)) {
	if s.closed {
		return
	}
	g := s.gen
	g.wg.Go(func() { f(g.ctx) })
}

// New returns a payment sandbox with no payments and no faults.
func New(opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{opts: opts, clock: opts.Clock, log: opts.Logger, gen: newGeneration()}
	s.clearLocked()
	s.handler = s.routes()
	return s
}

func (s *Server) routes() http.Handler {
	m := sandboxhttp.NewMux()
	h := func(f sandboxhttp.HandlerFunc) http.Handler { return sandboxhttp.Handler(s.log, f) }
	m.Handle("POST /v1/payments", s.provider(false, h(s.handleCreatePayment)))
	m.Handle("GET /v1/payments/{payment_id}", s.provider(false, h(s.handleGetPayment)))
	m.Handle("POST /v1/refunds", s.provider(true, h(s.handleCreateRefund)))
	m.Handle("GET /v1/refunds/{refund_id}", s.provider(true, h(s.handleGetRefund)))
	m.Handle("GET /v1/refunds", s.provider(true, h(s.handleListRefunds)))
	m.Handle("GET /checkout/{payment_id}", h(s.handleCheckout))
	m.Handle("GET /_sandbox/payments", h(s.handleListPayments))
	m.Handle("POST /_sandbox/payments/{payment_id}/{outcome}", h(s.handleSettlePayment))
	m.Handle("POST /_sandbox/refunds/{refund_id}/{outcome}", h(s.handleSettleRefund))
	m.Handle("GET /_sandbox/events", h(s.handleEvents))
	m.Handle("POST /_sandbox/events/{event_id}/resend", h(s.handleResend))
	m.Handle("POST /_sandbox/faults", h(s.handleSetFaults))
	m.Handle("GET /_sandbox/faults", h(s.handleGetFaults))
	m.Handle("POST /_sandbox/reset", h(s.handleReset))
	return m
}

// ServeHTTP serves the provider, checkout and control APIs.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Start serves the sandbox on addr (e.g. "127.0.0.1:4581"; port 0 picks a
// free one) in the background and returns once the address is bound.
func (s *Server) Start(addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener != nil {
		return errors.New("payment sandbox: already started")
	}
	l, err := sandboxhttp.Listen(addr, s)
	if err != nil {
		return fmt.Errorf("payment sandbox: %w", err)
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

// Shutdown stops background work (pending refunds stay pending, undelivered
// webhooks are abandoned), releases withheld answers and, if Start was
// called, stops the listener. It waits until ctx ends at most.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	g := s.gen
	g.cancel()
	l := s.listener
	s.listener = nil
	s.mu.Unlock()

	var err error
	if l != nil {
		err = l.Shutdown(ctx)
	}
	if werr := wait(ctx, &g.wg); werr != nil {
		err = errors.Join(err, fmt.Errorf("background work: %w", werr))
	}
	if err != nil {
		return fmt.Errorf("payment sandbox: %w", err)
	}
	return nil
}

// Reset clears all state and faults, like POST /_sandbox/reset. It returns
// once the background work of the old state has stopped.
func (s *Server) Reset() {
	s.mu.Lock()
	old := s.gen
	old.cancel() // under the lock: background work sees it before the new state
	s.gen = newGeneration()
	s.clearLocked()
	s.mu.Unlock()

	old.wg.Wait()
}

func (s *Server) clearLocked() {
	s.payments = map[string]*Payment{}
	s.refunds = map[string]*Refund{}
	s.refundOrder = nil
	s.paymentKeys = map[string]keyed{}
	s.refundKeys = map[string]keyed{}
	s.events = nil
	s.faults = Faults{Mode: FaultNone}
}

func (s *Server) handleReset(w http.ResponseWriter, _ *http.Request) error {
	s.Reset()
	sandboxhttp.WriteJSON(w, http.StatusOK, map[string]string{"status": "reset"})
	return nil
}

// wait waits for wg, or until ctx ends.
func wait(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
