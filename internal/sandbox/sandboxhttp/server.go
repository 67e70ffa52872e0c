package sandboxhttp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Mux is an http.ServeMux whose own 404 and 405 answers use the error
// envelope, so clients can decode every failure the same way.
type Mux struct {
	mux *http.ServeMux
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{mux: http.NewServeMux()} }

// Handle registers h for pattern (http.ServeMux syntax, e.g. "GET /v1/x/{id}").
func (m *Mux) Handle(pattern string, h http.Handler) { m.mux.Handle(pattern, h) }

func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := m.mux.Handler(r); pattern != "" {
		m.mux.ServeHTTP(w, r) // matches again so that PathValue works
		return
	}
	// No route: let ServeMux decide between 404 and 405 (it also sets the
	// Allow header), then replace its plain-text body with the envelope.
	m.mux.ServeHTTP(&statusOnly{header: w.Header()}, r)
	status := http.StatusNotFound
	code := "not_found"
	if w.Header().Get("Allow") != "" {
		status, code = http.StatusMethodNotAllowed, "method_not_allowed"
	}
	WriteError(w, status, code, fmt.Sprintf("%s %s: %s", r.Method, r.URL.Path, http.StatusText(status)))
}

// statusOnly is a ResponseWriter that keeps headers and discards the body.
type statusOnly struct{ header http.Header }

func (s *statusOnly) Header() http.Header         { return s.header }
func (s *statusOnly) Write(b []byte) (int, error) { return len(b), nil }
func (s *statusOnly) WriteHeader(int)             {}

// Drop ends the request without any answer: the client sees its connection
// closed (an unknown result, as when a provider crashes after doing the
// work). It hijacks the HTTP/1 connection and closes it; where hijacking is
// not possible (HTTP/2, recorders) it aborts the handler with
// http.ErrAbortHandler, which the server turns into a reset. Either way the
// handler must not touch w afterwards.
func Drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close() // the point is to close it; nothing to report to
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// Listener serves a handler on a TCP address until Shutdown.
type Listener struct {
	srv    *http.Server
	ln     net.Listener
	served chan error
}

// Listen binds addr (host:port; port 0 picks a free one) and serves h in the
// background. It returns once the address is bound, so a caller may use
// URL at once.
func Listen(addr string, h http.Handler) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	l := &Listener{
		srv:    &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		ln:     ln,
		served: make(chan error, 1),
	}
	go func() { l.served <- l.srv.Serve(ln) }()
	return l, nil
}

// URL returns the base URL, such as http://127.0.0.1:4580.
func (l *Listener) URL() string { return "http://" + l.ln.Addr().String() }

// Shutdown stops accepting connections and waits for requests in flight to
// finish; when ctx ends first it closes the remaining connections.
func (l *Listener) Shutdown(ctx context.Context) error {
	err := l.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(fmt.Errorf("graceful shutdown: %w", err), l.srv.Close())
	}
	if serr := <-l.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, fmt.Errorf("serve: %w", serr))
	}
	return err
}
