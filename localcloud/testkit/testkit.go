// Package testkit gives the adapters' test binaries an AWS endpoint on each
// engine the local cloud can run on, so that one contract suite is checked
// against two independently written emulators: kumo (in process) and moto
// (python3 -m moto.server, a child process, handed one request at a time
// since it is not safe under concurrent writes).
//
// The endpoint is the one `make run` serves on that engine, data path for
// data path: the front (request routing, SNS PublishBatch, presigned URLs,
// retries' answers, transaction conflicts), DynamoDB through the fidelity
// layer (package ddbfidelity) and the stream recorder, and the local
// cloud's own DynamoDB Streams API. What it leaves out is what the adapters
// do not call: Lambda, Step Functions and the control endpoints.
//
// A package opts in with
//
//	func TestMain(m *testing.M) {
//		os.Exit(testkit.Run(m, func(url string) { client = newClient(url) }))
//	}
//
// (or asks testkit.URL() for the endpoint of the engine its tests run on
// now): Run runs the whole package once per engine (CLUB_ENGINES, default
// "kumo,moto"), says which engine each pass is on, and fails if any pass
// fails. An engine that cannot start (no python3 or moto) fails the run
// with the reason; CLUB_ENGINES=kumo runs on kumo alone.
package testkit

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sivchari/kumo"

	"github.com/clubdev/club/localcloud/engine"
	"github.com/clubdev/club/localcloud/internal/dataplane"
)

// EnginesEnv names the engines Run runs the package on, comma-separated.
const EnginesEnv = "CLUB_ENGINES"

var (
	mu      sync.Mutex
	current string
	urls    = map[string]string{}
	closers []func()
)

// Engines returns the engines selected by CLUB_ENGINES (default: all).
func Engines() ([]string, error) {
	v := strings.TrimSpace(os.Getenv(EnginesEnv))
	if v == "" {
		return slices.Clone(engine.Names), nil
	}
	var out []string
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(engine.Names, name) {
			return nil, fmt.Errorf("%s=%q: unknown engine %q (want %s)", EnginesEnv, v, name, strings.Join(engine.Names, ", "))
		}
		out = append(out, name)
	}
	return out, nil
}

// Run runs the package's tests once per engine and returns the exit code.
// Before each pass it calls each of setup with the engine's endpoint, so
// that the package can point its shared clients at it.
func Run(m *testing.M, setup ...func(url string)) int {
	engines, err := Engines()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testkit:", err)
		return 2
	}
	defer closeAll()
	var failed []string
	for _, name := range engines {
		u, err := start(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testkit: engine %s: %v\n", name, err)
			failed = append(failed, name)
			continue
		}
		mu.Lock()
		current = name
		mu.Unlock()
		for _, f := range setup {
			f(u)
		}
		fmt.Fprintf(os.Stderr, "testkit: running the tests on engine %s\n", name)
		if code := m.Run(); code != 0 {
			failed = append(failed, name)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(os.Stderr, "testkit: FAIL on engine %s\n", strings.Join(failed, ", "))
		return 1
	}
	return 0
}

// Engine is the engine the tests run on now ("kumo" outside Run).
func Engine() string {
	mu.Lock()
	defer mu.Unlock()
	if current == "" {
		return engine.Kumo
	}
	return current
}

// URL is the endpoint of the current engine, started on first use.
func URL() string {
	u, err := start(Engine())
	if err != nil {
		panic(fmt.Sprintf("testkit: engine %s: %v", Engine(), err))
	}
	return u
}

// start starts an engine once per test binary.
func start(name string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if u, ok := urls[name]; ok {
		return u, nil
	}
	switch name {
	case engine.Kumo:
		srv := kumo.NewServer()
		ep, err := dataplane.New(dataplane.Options{Engine: name, EngineURL: srv.URL})
		if err != nil {
			srv.Close()
			return "", err
		}
		hs := httptest.NewServer(ep)
		urls[name] = hs.URL
		closers = append(closers, srv.Close, hs.Close, ep.Close)
	case engine.Moto:
		m, err := engine.StartMoto(context.Background(), engine.MotoOptions{})
		if err != nil {
			return "", err
		}
		ep, err := dataplane.New(dataplane.Options{Engine: name, EngineURL: m.URL()})
		if err != nil {
			_ = m.Close()
			return "", err
		}
		hs := httptest.NewServer(ep)
		urls[name] = hs.URL
		closers = append(closers, func() { _ = m.Close() }, hs.Close, ep.Close)
	default:
		return "", fmt.Errorf("unknown engine %q", name)
	}
	return urls[name], nil
}

func closeAll() {
	mu.Lock()
	defer mu.Unlock()
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
	closers, urls = nil, map[string]string{}
}
