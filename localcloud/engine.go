package localcloud

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"unsafe"

	"github.com/sivchari/kumo"

	"github.com/clubdev/club/localcloud/engine"
)

// The engines Config.Engine accepts (see package engine).
const (
	EngineKumo = engine.Kumo
	EngineMoto = engine.Moto
)

// dataPlane is a running engine.
type dataPlane interface {
	// URL is where it serves the AWS APIs.
	URL() string
	// KumoURL, when not empty, is a kumo server for the services the engine
	// does not serve (engine.KumoServices).
	KumoURL() string
	// Close stops it; safe to call more than once.
	Close() error
}

// startEngine starts the named engine.
func startEngine(ctx context.Context, name string, logDir string, log *slog.Logger) (dataPlane, error) {
	switch name {
	case "", engine.Kumo:
		return kumoEngine{kumo.NewServer()}, nil
	case engine.Moto:
		m, err := engine.StartMoto(ctx, engine.MotoOptions{LogFile: filepath.Join(logDir, "moto.log"), Logger: log, AccountID: AccountID})
		if err != nil {
			return nil, err
		}
		return motoEngine{MotoServer: m, kumo: kumo.NewServer()}, nil
	default:
		return nil, fmt.Errorf("unknown engine %q (want one of %s)", name, strings.Join(engine.Names, ", "))
	}
}

type kumoEngine struct{ srv *kumo.Server }

func (k kumoEngine) URL() string { return k.srv.URL }

// Handler is kumo's own http.Handler, which the front calls in this process
// instead of across a loopback connection: that hop, a reverse proxy and a
// second HTTP server on every AWS call, was a fifth of the local cloud's CPU
// under load (docs/benchmarks.md, CPU per enrollment). kumo only exports
// its server (an httptest.Server behind an unexported field), so the
// handler is read from there; nil if kumo's Server no longer has that
// shape, and the front then proxies to URL as before
// (TestKumoHandlerIsReachable fails first).
func (k kumoEngine) Handler() http.Handler { return kumoHandler(k.srv) }

func kumoHandler(srv *kumo.Server) http.Handler {
	f := reflect.ValueOf(srv).Elem().FieldByName("httpServer")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*httptest.Server]() || f.IsNil() {
		return nil
	}
	ts := (*httptest.Server)(unsafe.Pointer(f.Pointer()))
	if ts.Config == nil {
		return nil
	}
	return ts.Config.Handler
}
func (k kumoEngine) KumoURL() string { return "" }
func (k kumoEngine) Close() error {
	k.srv.Close()
	return nil
}

type motoEngine struct {
	*engine.MotoServer
	kumo *kumo.Server
}

func (m motoEngine) KumoURL() string { return m.kumo.URL }
func (m motoEngine) Close() error {
	m.kumo.Close()
	return m.MotoServer.Close()
}
