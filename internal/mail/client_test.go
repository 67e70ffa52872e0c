package mail_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/clock"
	"github.com/clubdev/club/internal/mail"
	mailsandbox "github.com/clubdev/club/internal/sandbox/mail"
)

// fixture is a mail sandbox served in-process, counting the sends that reach
// it, and a client pointed at it.
type fixture struct {
	sandbox *mailsandbox.Server
	url     string
	client  *mail.Client
	// sends counts POST /v1/messages requests that reached the server.
	sends atomic.Int64
}

func setup(t *testing.T, opts mailsandbox.Options, cfg mail.Config) *fixture {
	t.Helper()
	f := &fixture{sandbox: mailsandbox.New(opts)}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/messages" {
			f.sends.Add(1)
		}
		f.sandbox.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { require.NoError(t, f.sandbox.Shutdown(context.Background())) })
	f.url = hs.URL
	cfg.BaseURL = hs.URL
	c, err := mail.New(cfg)
	require.NoError(t, err)
	f.client = c
	return f
}

func (f *fixture) faults(t *testing.T, mode mailsandbox.FaultMode, latency time.Duration) {
	t.Helper()
	require.NoError(t, f.sandbox.SetFaults(mailsandbox.Faults{Mode: mode, Rate: 1, LatencyMS: latency.Milliseconds()}, nil))
}

var welcome = mail.Message{To: "ada@example.com", Subject: "You are enrolled", Text: "See you in class."}

func TestSendAcceptedAndDeduplicatedByKey(t *testing.T) {
	t.Parallel()
	f := setup(t, mailsandbox.Options{}, mail.Config{})
	ctx := context.Background()

	first, err := f.client.Send(ctx, "notify-1", welcome)
	require.NoError(t, err)
	require.NotEmpty(t, first.MessageID)
	require.False(t, first.Replayed)

	again, err := f.client.Send(ctx, "notify-1", welcome)
	require.NoError(t, err)
	require.Equal(t, first.MessageID, again.MessageID)
	require.True(t, again.Replayed, "the provider recognised the key")

	msgs := f.sandbox.Messages("")
	require.Len(t, msgs, 1)
	require.Equal(t, "notify-1", msgs[0].IdempotencyKey)
	require.Equal(t, welcome.To, msgs[0].To)
	require.Equal(t, welcome.Subject, msgs[0].Subject)
	require.Equal(t, welcome.Text, msgs[0].Text)
}

// TestSendClassifiesAnswers checks that every kind of answer maps to exactly
// one outcome class.
func TestSendClassifiesAnswers(t *testing.T) {
	t.Parallel()
	all := []error{mail.ErrRejected, mail.ErrKeyReused, mail.ErrRateLimited, mail.ErrUnavailable, mail.ErrOutcomeUnknown}
	tests := []struct {
		name string
		// arrange prepares the sandbox and returns the message to send
		// under key "k".
		arrange    func(t *testing.T, f *fixture) mail.Message
		want       []error // the classes the error matches; the others must not match
		status     int
		code       string
		retryAfter time.Duration
		stored     int // messages in the sandbox afterwards
	}{
		{
			name: "409 key reused for another payload",
			arrange: func(t *testing.T, f *fixture) mail.Message {
				_, err := f.client.Send(context.Background(), "k", welcome)
				require.NoError(t, err)
				changed := welcome
				changed.To = "ada.new@example.com"
				return changed
			},
			want: []error{mail.ErrKeyReused, mail.ErrRejected}, status: http.StatusConflict, code: "idempotency_key_reused", stored: 1,
		},
		{
			name: "400 validation failed",
			arrange: func(*testing.T, *fixture) mail.Message {
				bad := welcome
				bad.To = "not an address"
				return bad
			},
			want: []error{mail.ErrRejected}, status: http.StatusBadRequest, code: "validation_failed",
		},
		{
			name: "503 provider error",
			arrange: func(t *testing.T, f *fixture) mail.Message {
				f.faults(t, mailsandbox.FaultError, 0)
				return welcome
			},
			want: []error{mail.ErrUnavailable}, status: http.StatusServiceUnavailable, code: "provider_unavailable",
		},
		{
			name: "429 with Retry-After",
			arrange: func(t *testing.T, f *fixture) mail.Message {
				require.NoError(t, f.sandbox.SetRate(0.25)) // one token, the next one 4 s later
				_, err := f.client.Send(context.Background(), "earlier", welcome)
				require.NoError(t, err)
				return welcome
			},
			want: []error{mail.ErrRateLimited}, status: http.StatusTooManyRequests, code: "rate_limited", retryAfter: 4 * time.Second, stored: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A frozen clock makes the rate limit and Retry-After exact.
			f := setup(t, mailsandbox.Options{Clock: clock.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))}, mail.Config{})
			m := tt.arrange(t, f)

			_, err := f.client.Send(context.Background(), "k", m)
			require.Error(t, err)
			for _, class := range all {
				require.Equal(t, contains(tt.want, class), errors.Is(err, class), "errors.Is(%v, %v)", err, class)
			}
			pe, ok := errors.AsType[*mail.ProviderError](err)
			require.True(t, ok, "%v is a *ProviderError", err)
			require.Equal(t, tt.status, pe.Status)
			require.Equal(t, tt.code, pe.Code)
			require.NotEmpty(t, pe.Message)
			d, ok := mail.RetryAfter(err)
			require.Equal(t, tt.retryAfter, d)
			require.Equal(t, tt.retryAfter > 0, ok)
			require.Len(t, f.sandbox.Messages(""), tt.stored)
		})
	}
}

func contains(errs []error, target error) bool {
	for _, e := range errs {
		if e == target {
			return true
		}
	}
	return false
}

// TestDroppedConnectionIsUnknownAndNotReplayed is the unknown window: the
// provider stores the message and drops the connection without answering.
// The connection is a reused keep-alive one, the case in which net/http
// would resend a replayable request by itself. The client must report the
// outcome as unknown after exactly one request, and a retry with the same key
// must find the stored message instead of sending a second one.
func TestDroppedConnectionIsUnknownAndNotReplayed(t *testing.T) {
	t.Parallel()
	f := setup(t, mailsandbox.Options{}, mail.Config{})
	ctx := context.Background()

	// Warm up: this send leaves an idle keep-alive connection in the pool.
	_, err := f.client.Send(ctx, "warm-up", welcome)
	require.NoError(t, err)

	f.faults(t, mailsandbox.FaultAcceptThenDrop, 0)
	_, err = f.client.Send(ctx, "notify-2", welcome)
	require.ErrorIs(t, err, mail.ErrOutcomeUnknown)
	require.NotErrorIs(t, err, mail.ErrUnavailable)
	require.EqualValues(t, 2, f.sends.Load(), "the dropped send reached the provider exactly once")
	require.Len(t, f.sandbox.Messages(""), 2, "the provider accepted it although the client could not know")
	require.Zero(t, f.sandbox.Stats().Duplicates, "nothing was resent behind the caller's back")

	f.faults(t, mailsandbox.FaultNone, 0)
	retry, err := f.client.Send(ctx, "notify-2", welcome)
	require.NoError(t, err)
	require.True(t, retry.Replayed, "the retry resolved the unknown outcome without a second mail")
	require.Equal(t, f.sandbox.Messages("")[1].MessageID, retry.MessageID)
	require.Len(t, f.sandbox.Messages(""), 2)
}

// TestStandardClientWouldReplay documents the hazard the client avoids: the
// same dropped send made with a plain http.Request (GetBody set by
// http.NewRequest) reaches the provider twice, because the Transport resends
// it on its own. If this test starts failing, net/http changed its retry
// rules and the package documentation must be revisited.
func TestStandardClientWouldReplay(t *testing.T) {
	t.Parallel()
	f := setup(t, mailsandbox.Options{}, mail.Config{})
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	post := func(key string) error {
		req, err := http.NewRequest(http.MethodPost, f.url+"/v1/messages",
			bytes.NewReader([]byte(`{"to":"ada@example.com","subject":"Hi","text":"x"}`)))
		require.NoError(t, err)
		req.Header.Set("Idempotency-Key", key)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body) // read to the end so the connection is reused
		return err
	}
	require.NoError(t, post("warm-up"))
	f.faults(t, mailsandbox.FaultAcceptThenDrop, 0)
	require.Error(t, post("k"))
	require.EqualValues(t, 3, f.sends.Load(), "warm-up, the dropped send, and the Transport's own resend")
	require.EqualValues(t, 1, f.sandbox.Stats().Duplicates)
}

func TestTimeoutWhileWaitingIsUnknown(t *testing.T) {
	t.Parallel()
	f := setup(t, mailsandbox.Options{}, mail.Config{Timeout: 100 * time.Millisecond})
	f.faults(t, mailsandbox.FaultSlow, 5*time.Second)

	_, err := f.client.Send(context.Background(), "k", welcome)
	require.ErrorIs(t, err, mail.ErrOutcomeUnknown, "the request was written; the answer did not come in time")
	require.EqualValues(t, 1, f.sends.Load())
}

func TestUnreachableProviderIsUnavailable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there any more

	c, err := mail.New(mail.Config{BaseURL: "http://" + addr})
	require.NoError(t, err)
	_, err = c.Send(context.Background(), "k", welcome)
	require.ErrorIs(t, err, mail.ErrUnavailable, "a refused connection sent nothing")
	require.NotErrorIs(t, err, mail.ErrOutcomeUnknown)
}

func TestSendHonoursContextBeforeSending(t *testing.T) {
	t.Parallel()
	f := setup(t, mailsandbox.Options{}, mail.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.client.Send(ctx, "k", welcome)
	require.ErrorIs(t, err, mail.ErrUnavailable)
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, f.sends.Load())
}

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  mail.Config
		ok   bool
	}{
		{"valid", mail.Config{BaseURL: "http://127.0.0.1:4580"}, true},
		{"valid with path and slash", mail.Config{BaseURL: "https://mail.example.com/api/"}, true},
		{"empty", mail.Config{}, false},
		{"relative", mail.Config{BaseURL: "127.0.0.1:4580"}, false},
		{"other scheme", mail.Config{BaseURL: "ftp://mail.example.com"}, false},
		{"negative timeout", mail.Config{BaseURL: "http://x", Timeout: -time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := mail.New(tt.cfg)
			require.Equal(t, tt.ok, err == nil, "error: %v", err)
		})
	}
}

func TestSendRejectsEmptyKey(t *testing.T) {
	t.Parallel()
	f := setup(t, mailsandbox.Options{}, mail.Config{})
	_, err := f.client.Send(context.Background(), "", welcome)
	require.Error(t, err)
	require.Zero(t, f.sends.Load())
}

// A notifier sends ten mails at once, batch after batch: the client keeps
// the connections of one batch for the next instead of dialing (over TLS,
// handshaking) again. Go's default transport would keep two and close eight
// after every batch.
func TestConcurrentSendsReuseTheirConnections(t *testing.T) {
	t.Parallel()
	const concurrent, batches = 10, 3
	var dialed atomic.Int64
	arrived := make(chan struct{}, concurrent)
	release := make(chan struct{})
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release // hold every send until the whole batch is in flight
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"message_id":"m"}`)
	}))
	hs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialed.Add(1)
		}
	}
	hs.Start()
	t.Cleanup(hs.Close)
	c, err := mail.New(mail.Config{BaseURL: hs.URL})
	require.NoError(t, err)

	for b := range batches {
		errs := make(chan error, concurrent)
		for i := range concurrent {
			go func() {
				_, err := c.Send(context.Background(), fmt.Sprintf("k-%d-%d", b, i), welcome)
				errs <- err
			}()
		}
		for range concurrent {
			<-arrived
		}
		for range concurrent {
			release <- struct{}{}
		}
		for range concurrent {
			require.NoError(t, <-errs)
		}
	}
	// A connection goes back to the pool just after its send returns, so a
	// batch may start a moment before the last one is back: allow for a
	// few, far from the 8 a batch that Go's default would dial.
	require.GreaterOrEqual(t, dialed.Load(), int64(concurrent))
	require.Less(t, dialed.Load(), int64(concurrent+(concurrent-2)),
		"%d sends in %d batches of %d dialed %d connections; two idle kept would need %d", batches*concurrent, batches, concurrent, dialed.Load(), concurrent+(batches-1)*(concurrent-2))
}
