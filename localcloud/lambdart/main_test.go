package lambdart_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/localcloud/invoke"
	"github.com/clubdev/club/localcloud/lambdart"
)

// testFunctions are the programs under testdata/fn, built once by TestMain.
var testFunctions = []string{"echo", "env", "fail", "crash", "sleep", "record", "spawn"}

// binaries maps a test function to its built bootstrap.
var binaries = map[string]string{}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	moduleRoot, pkgDir, err := locateModule()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir, err := os.MkdirTemp("", "lambdart-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(binDir)

	var specs []lambdart.BuildSpec
	for _, name := range testFunctions {
		out := filepath.Join(binDir, name, "bootstrap")
		binaries[name] = out
		specs = append(specs, lambdart.BuildSpec{
			Name:       name,
			Dir:        "./" + filepath.ToSlash(filepath.Join(pkgDir, "testdata", "fn", name)),
			ModuleRoot: moduleRoot,
			Out:        out,
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := lambdart.BuildAll(ctx, specs, 0); err != nil {
		fmt.Fprintln(os.Stderr, "build test functions:", err)
		return 1
	}
	return m.Run()
}

// locateModule returns the module root and this package's directory
// relative to it.
func locateModule() (root, rel string, err error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			return dir, rel, err
		}
		if filepath.Dir(dir) == dir {
			return "", "", fmt.Errorf("no go.mod above %s", wd)
		}
	}
}

// env is one running Runtime behind a real HTTP server, as the local
// cloud's front serves it.
type env struct {
	rt     *lambdart.Runtime
	url    string
	client *lambda.Client
	logs   *syncBuffer
	logDir string
}

type setupOptions struct {
	retryDelays []time.Duration
	skipReady   bool
}

func setup(t *testing.T, opts setupOptions, fns ...lambdart.FunctionConfig) *env {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)

	e := &env{logs: &syncBuffer{}, logDir: t.TempDir(), url: srv.URL}
	e.rt = lambdart.New(lambdart.Options{
		RuntimeAPIHost:   strings.TrimPrefix(srv.URL, "http://"),
		Env:              map[string]string{"SHARED": "from-options", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"},
		LogDir:           e.logDir,
		LogWriter:        e.logs,
		StopGrace:        500 * time.Millisecond,
		AsyncRetryDelays: opts.retryDelays,
	})
	mux.Handle("/_runtime/", e.rt.RuntimeHandler())
	mux.Handle("/2015-03-31/", e.rt.InvokeHandler())
	t.Cleanup(func() {
		require.NoError(t, e.rt.Stop())
		srv.Close()
		if t.Failed() {
			t.Logf("function output:\n%s", e.logs.String())
		}
	})

	for _, fn := range fns {
		require.NoError(t, e.rt.AddFunction(fn))
	}
	require.NoError(t, e.rt.Start(t.Context()))
	if !opts.skipReady {
		ctx, cancel := context.WithTimeout(t.Context(), patience.Wait())
		defer cancel()
		require.NoError(t, e.rt.Ready(ctx))
	}

	e.client = lambda.NewFromConfig(aws.Config{
		Region:       lambdart.Region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(srv.URL),
	})
	return e
}

// fn is a function config for one of the test programs.
func fn(program, name string) lambdart.FunctionConfig {
	return lambdart.FunctionConfig{Name: name, Binary: binaries[program], Timeout: 10 * time.Second}
}

func (e *env) invoke(t *testing.T, function string, payload any) invoke.Result {
	t.Helper()
	body, err := json.Marshal(payload)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), patience.Wait())
	defer cancel()
	res, err := e.rt.Invoke(ctx, function, body)
	require.NoError(t, err)
	return res
}

func (e *env) stats(t *testing.T, function string) lambdart.FunctionStats {
	t.Helper()
	st, ok := e.rt.Stats()[function]
	require.True(t, ok, "no stats for %s", function)
	return st
}

type pidResponse struct {
	PID int `json:"pid"`
}

func decodePID(t *testing.T, res invoke.Result) int {
	t.Helper()
	require.False(t, res.Failed(), "invocation failed: %s", res.Payload)
	var r pidResponse
	require.NoError(t, json.Unmarshal(res.Payload, &r))
	require.NotZero(t, r.PID)
	return r.PID
}

// syncBuffer is a bytes.Buffer safe for the runtime's concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
