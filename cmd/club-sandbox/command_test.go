package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/internal/webhooksig"
)

// syncBuffer is a bytes.Buffer safe to write from the command while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var listening = regexp.MustCompile(`(\w+) sandbox listening on (http://\S+)`)

// run starts the command in the background and returns the announced URLs
// by sandbox name, and a function that stops it and returns its exit status.
func run(t *testing.T, args ...string) (map[string]string, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	exit := make(chan int, 1)
	go func() { exit <- execute(ctx, args, &stdout, &stderr) }()

	want := 1
	if args[0] == "all" {
		want = 2
	}
	require.Eventually(t, func() bool {
		return len(listening.FindAllStringSubmatch(stdout.String(), -1)) == want
	}, patience.Wait(), 5*time.Millisecond, "stdout %q, stderr %q", stdout.String(), stderr.String())
	urls := map[string]string{}
	for _, m := range listening.FindAllStringSubmatch(stdout.String(), -1) {
		urls[m[1]] = m[2]
	}
	stop := func() int {
		cancel()
		select {
		case code := <-exit:
			return code
		case <-time.After(patience.Wait()):
			t.Fatal("the command did not stop")
			return -1
		}
	}
	return urls, stop
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"mail", "--help"}, {"payment", "--help"}, {"all", "--help"}} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 0, execute(context.Background(), args, &stdout, &stderr), args)
		require.Contains(t, stdout.String(), "Usage:", args)
	}
}

func TestUsageErrorsExitWithStatus2(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"bogus"},
		{"mail", "--no-such-flag"},
		{"mail", "--rate", "0"},
		{"mail", "extra-arg"},
		{"payment", "--webhook-url", "http://127.0.0.1:3000/webhooks/payments"},
		{"payment", "--webhook-url", "not a url", "--webhook-secret-file", "f"},
	} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 2, execute(context.Background(), args, &stdout, &stderr), "%v: %s", args, stderr.String())
		require.Contains(t, stderr.String(), "--help", args)
	}
}

func TestMailServesUntilStopped(t *testing.T) {
	t.Parallel()
	urls, stop := run(t, "mail", "--addr", "127.0.0.1:0", "--rate", "5")
	resp, err := http.Get(urls["mail"] + "/_sandbox/config")
	require.NoError(t, err)
	var cfg map[string]float64
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&cfg))
	resp.Body.Close()
	require.Equal(t, 5.0, cfg["rate_per_second"])

	require.Equal(t, 0, stop())
	_, err = http.Get(urls["mail"] + "/v1/messages")
	require.Error(t, err, "stopped")
}

func TestPaymentSignsWebhooksWithTheSecretFromFile(t *testing.T) {
	t.Parallel()
	secretFile := filepath.Join(t.TempDir(), "webhook-secret")
	require.NoError(t, os.WriteFile(secretFile, []byte("s3cret\n"), 0o600))

	got := make(chan *http.Request, 1)
	bodies := make(chan []byte, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
	}))
	t.Cleanup(hook.Close)

	urls, stop := run(t, "all", "--mail-addr", "127.0.0.1:0", "--payment-addr", "127.0.0.1:0",
		"--webhook-url", hook.URL, "--webhook-secret-file", secretFile)
	require.Contains(t, urls, "mail")
	base := urls["payment"]

	req, err := http.NewRequest(http.MethodPost, base+"/v1/payments", strings.NewReader(`{"amount_cents":100,"currency":"EUR","reference":"p-1"}`))
	require.NoError(t, err)
	req.Header.Set("Idempotency-Key", "p-1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var p struct {
		PaymentID string `json:"payment_id"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&p))
	resp.Body.Close()
	resp, err = http.Post(base+"/_sandbox/payments/"+p.PaymentID+"/succeed", "", nil)
	require.NoError(t, err)
	resp.Body.Close()

	select {
	case r := <-got:
		body := <-bodies
		require.NoError(t, webhooksig.Verify([]byte("s3cret"), r.Header.Get(webhooksig.Header), body, time.Now(), 0),
			"signed with the file's secret, without its trailing newline")
	case <-time.After(patience.Wait()):
		t.Fatal("no webhook")
	}
	require.Equal(t, 0, stop())
}

func TestStartFailureExitsWithStatus1(t *testing.T) {
	t.Parallel()
	urls, stop := run(t, "mail", "--addr", "127.0.0.1:0")
	t.Cleanup(func() { stop() })
	taken := strings.TrimPrefix(urls["mail"], "http://")

	var stdout, stderr bytes.Buffer
	require.Equal(t, 1, execute(context.Background(), []string{"mail", "--addr", taken}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "listen on "+taken)
}
