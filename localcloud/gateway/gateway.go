package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/clubdev/club/localcloud/issuer"
)

// Gateway is a local API Gateway HTTP API. It is an http.Handler and safe for
// concurrent use; Start and StartListener serve it on a socket.
type Gateway struct {
	cfg           Config
	router        *router
	authorizers   map[string]*jwtAuthorizer
	issuerHandler http.Handler // nil without an issuer

	mu       sync.Mutex
	srv      *http.Server
	addr     string
	served   chan struct{} // closed when Serve returns
	serveErr error         // what Serve returned; read after served is closed
}

// New validates cfg and builds the gateway. It does not listen yet.
func New(cfg Config) (*Gateway, error) {
	cfg.setDefaults()
	rt, rerr := newRouter(cfg.Routes)
	if err := errors.Join(cfg.validate(), rerr); err != nil {
		return nil, fmt.Errorf("gateway: invalid config: %w", err)
	}

	g := &Gateway{cfg: cfg, router: rt, authorizers: map[string]*jwtAuthorizer{}}
	if cfg.Issuer != nil {
		g.issuerHandler = cfg.Issuer.Handler()
	}
	keySets := map[string]*keySet{} // one cache per issuer, shared by its authorizers
	for name, a := range cfg.Authorizers {
		ks, ok := keySets[a.Issuer]
		if !ok {
			ks = &keySet{issuer: a.Issuer, client: cfg.HTTPClient, now: time.Now}
			keySets[a.Issuer] = ks
		}
		source, _ := parseIdentitySource(a.IdentitySource) // validated above
		auds := map[string]bool{}
		for _, v := range a.Audience {
			auds[v] = true
		}
		g.authorizers[name] = &jwtAuthorizer{issuer: a.Issuer, audiences: auds, source: source, keys: ks, now: time.Now}
	}
	return g, nil
}

// Start listens on Config.Addr and serves in the background. A busy port is
// an error naming the address.
func (g *Gateway) Start() error {
	ln, err := net.Listen("tcp", g.cfg.Addr)
	if err != nil {
		return fmt.Errorf("gateway: listen on %s: %w", g.cfg.Addr, err)
	}
	if err := g.StartListener(ln); err != nil {
		ln.Close()
		return err
	}
	return nil
}

// StartListener serves on ln in the background; the gateway owns ln from
// now on. It lets a caller learn the port before building the Config's
// issuer (tests listen on port 0).
func (g *Gateway) StartListener(ln net.Listener) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.srv != nil {
		return errors.New("gateway: already started")
	}
	g.srv = &http.Server{
		Handler:           g,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// The quota is checked in ServeHTTP, with API Gateway's answer;
		// this only stops a client from making the server buffer more.
		MaxHeaderBytes: max(g.cfg.MaxHeaderBytes*4, 64<<10),
		ErrorLog:       slog.NewLogLogger(g.cfg.Logger.Handler(), slog.LevelWarn),
	}
	g.addr = ln.Addr().String()
	g.served = make(chan struct{})
	go func(srv *http.Server, served chan struct{}) {
		err := srv.Serve(ln)
		g.mu.Lock()
		g.serveErr = err
		g.mu.Unlock()
		close(served)
	}(g.srv, g.served)
	return nil
}

// URL is the base URL the gateway serves on ("" before it starts).
func (g *Gateway) URL() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.addr == "" {
		return ""
	}
	return "http://" + g.addr
}

// Shutdown stops accepting requests and waits for those in flight, which the
// integration timeout bounds. If ctx ends first the remaining connections
// are closed and ctx's error is returned. Shutdown of a gateway that never
// started does nothing; calling it again is harmless.
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	srv, served := g.srv, g.served
	g.mu.Unlock()
	if srv == nil {
		return nil
	}
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
		return fmt.Errorf("gateway: shutdown: %w", err)
	}
	<-served
	g.mu.Lock()
	err := g.serveErr
	g.mu.Unlock()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("gateway: serve: %w", err)
	}
	return nil
}

// Gateway answers of its own, with API Gateway's bodies.
var (
	msgNotFound       = message{"Not Found"}
	msgUnauthorized   = message{"Unauthorized"}
	msgTooLarge       = message{"Request Entity Too Large"}
	msgHeaderTooLarge = message{"Request Header Fields Too Large"}
	msgInternalError  = message{"Internal Server Error"}
	msgUnavailable    = message{"Service Unavailable"}
	statusOK          = map[string]string{"status": "ok"}
	statusNotReady    = map[string]string{"status": "unavailable"}
)

// HealthPath is the readiness probe the gateway answers itself.
const HealthPath = "/healthz"

// DocsPath is where Config.Docs is served.
const DocsPath = "/docs"

type message struct {
	Message string `json:"message"`
}

// ServeHTTP handles one request in the order the package documentation
// gives: header size, issuer documents, body size, /healthz, route selection,
// authorization, invocation and response translation.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	received := time.Now()
	requestID := newRequestID()
	w.Header().Set("Apigw-Requestid", requestID)

	if headerBytes(r) > g.cfg.MaxHeaderBytes {
		writeJSON(w, http.StatusRequestHeaderFieldsTooLarge, msgHeaderTooLarge)
		return
	}
	if iss := g.cfg.Issuer; iss != nil && (r.URL.Path == iss.Path()+issuer.DiscoveryPath || r.URL.Path == iss.Path()+issuer.JWKSPath) {
		g.issuerHandler.ServeHTTP(w, r)
		return
	}
	if r.ContentLength > g.cfg.MaxBodyBytes {
		writeJSON(w, http.StatusRequestEntityTooLarge, msgTooLarge)
		return
	}

	rt, params := g.router.match(r.Method, r.URL.EscapedPath())
	if r.Method == http.MethodGet && r.URL.Path == HealthPath {
		ready := g.cfg.Health == nil || g.cfg.Health()
		if !ready {
			writeJSON(w, http.StatusServiceUnavailable, statusNotReady)
			return
		}
		// Only a route written for /healthz takes it over; a catch-all
		// does not.
		if rt == nil || rt.Path != HealthPath {
			writeJSON(w, http.StatusOK, statusOK)
			return
		}
	}
	if g.cfg.Docs != nil && r.URL.Path == DocsPath && (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		(rt == nil || rt.Path != DocsPath) {
		g.cfg.Docs.ServeHTTP(w, r)
		return
	}
	if rt == nil {
		writeJSON(w, http.StatusNotFound, msgNotFound)
		return
	}

	var tok *verifiedToken
	if rt.Authorizer != "" {
		var aerr *authError
		tok, aerr = g.authorizers[rt.Authorizer].authorize(r.Context(), r)
		if aerr != nil {
			g.cfg.Logger.Info("gateway: request refused by authorizer",
				"request_id", requestID, "route", rt.key, "authorizer", rt.Authorizer, "reason", aerr.Error())
			w.Header().Set("Www-Authenticate", aerr.challenge())
			writeJSON(w, http.StatusUnauthorized, msgUnauthorized)
			return
		}
	}

	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeJSON(w, http.StatusRequestEntityTooLarge, msgTooLarge)
			return
		}
		// The body could not be read: the client hung up or broke the
		// framing. It will rarely see this answer; the function is not run.
		writeJSON(w, http.StatusBadRequest, message{"Bad Request"})
		return
	}

	event := buildEvent(r, rt, params, body, tok, g.cfg.APIID, requestID, received)
	payload, err := marshalEvent(event)
	if err != nil {
		g.fail(w, requestID, rt, fmt.Errorf("encode event: %w", err))
		return
	}

	ctx, cancel := context.WithTimeout(r.Context(), g.cfg.IntegrationTimeout)
	defer cancel()
	res, err := g.cfg.Invoker.Invoke(ctx, rt.FunctionName, payload)
	switch {
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		g.cfg.Logger.Warn("gateway: integration timed out",
			"request_id", requestID, "route", rt.key, "function", rt.FunctionName, "timeout", g.cfg.IntegrationTimeout)
		writeJSON(w, http.StatusServiceUnavailable, msgUnavailable)
		return
	case err != nil:
		g.fail(w, requestID, rt, fmt.Errorf("invoke: %w", err))
		return
	case res.Failed():
		info := res.Error()
		g.fail(w, requestID, rt, fmt.Errorf("function error %s (%s): %s", res.FunctionError, info.ErrorType, info.ErrorMessage))
		return
	}

	resp, err := translateResponse(res.Payload)
	if err != nil {
		g.fail(w, requestID, rt, err)
		return
	}
	h := w.Header()
	for name, values := range resp.header {
		h[name] = values
	}
	if _, ok := h["Content-Type"]; !ok {
		// No sniffing: the client gets the content type the function set,
		// or none.
		h["Content-Type"] = nil
	}
	w.WriteHeader(resp.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(resp.body) // a failed write means the client went away
	}
}

// headerBytes is what API Gateway's quota counts: the request line and the
// header values.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto)
	for _, values := range r.Header {
		for _, v := range values {
			n += len(v)
		}
	}
	if r.Host != "" && r.Header.Get("Host") == "" {
		n += len(r.Host) // Go moves Host out of the header map
	}
	return n
}

// fail answers 500 without details, which go to the log: API Gateway never
// shows a function's error to the client.
func (g *Gateway) fail(w http.ResponseWriter, requestID string, rt *route, err error) {
	g.cfg.Logger.Warn("gateway: integration failed",
		"request_id", requestID, "route", rt.key, "function", rt.FunctionName, "error", err)
	writeJSON(w, http.StatusInternalServerError, msgInternalError)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, _ := json.Marshal(v) // only fixed, marshalable values reach here
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

var _ http.Handler = (*Gateway)(nil)
