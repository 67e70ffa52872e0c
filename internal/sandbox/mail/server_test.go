package mail_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/clock"
	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/internal/sandbox/mail"
)

var start = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

type fixture struct {
	srv   *mail.Server
	url   string
	clock *clock.Fake
	// served receives once per request the sandbox has finished handling.
	served chan string
}

func setup(t *testing.T, opts mail.Options) *fixture {
	t.Helper()
	f := &fixture{clock: clock.NewFake(start), served: make(chan string, 1024)}
	opts.Clock = f.clock
	f.srv = mail.New(opts)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { f.served <- r.Method + " " + r.URL.Path }()
		f.srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { require.NoError(t, f.srv.Shutdown(context.Background())) })
	f.url = hs.URL
	return f
}

type reply struct {
	status int
	header http.Header
	body   map[string]any
}

func (r reply) errorCode() string {
	e, _ := r.body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func do(t *testing.T, client *http.Client, method, url string, header map[string]string, body string) (reply, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r := reply{status: resp.StatusCode, header: resp.Header}
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &r.body), "body %s", raw)
	}
	return r, nil
}

func (f *fixture) call(t *testing.T, method, path string, header map[string]string, body string) reply {
	t.Helper()
	r, err := do(t, http.DefaultClient, method, f.url+path, header, body)
	require.NoError(t, err)
	return r
}

func (f *fixture) send(t *testing.T, key, to, subject string) reply {
	t.Helper()
	body := fmt.Sprintf(`{"to":%q,"subject":%q,"text":"See you in class."}`, to, subject)
	return f.call(t, http.MethodPost, "/v1/messages", map[string]string{"Idempotency-Key": key}, body)
}

func (f *fixture) control(t *testing.T, path, body string) {
	t.Helper()
	r := f.call(t, http.MethodPost, path, nil, body)
	require.Equal(t, http.StatusOK, r.status, "%s: %v", path, r.body)
}

func (f *fixture) messages(t *testing.T, query string) []map[string]any {
	t.Helper()
	r := f.call(t, http.MethodGet, "/v1/messages"+query, nil, "")
	require.Equal(t, http.StatusOK, r.status)
	list, ok := r.body["messages"].([]any)
	require.True(t, ok, "messages must be a list: %v", r.body)
	out := make([]map[string]any, len(list))
	for i, m := range list {
		out[i] = m.(map[string]any)
	}
	return out
}

func (f *fixture) stats(t *testing.T) mail.Stats {
	t.Helper()
	resp, err := http.Get(f.url + "/_sandbox/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	var s mail.Stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&s))
	return s
}

func TestSendStoresMessageAndListsIt(t *testing.T) {
	t.Parallel()
	f := setup(t, mail.Options{})

	first := f.send(t, "enrollment-1", "ada@example.com", "Welcome to Go 101")
	require.Equal(t, http.StatusAccepted, first.status)
	id, _ := first.body["message_id"].(string)
	require.True(t, strings.HasPrefix(id, "msg_"), "message_id %q", id)
	require.Empty(t, first.header.Get("Idempotent-Replayed"))
	require.Equal(t, http.StatusAccepted, f.send(t, "enrollment-2", "bob@example.com", "Welcome").status)

	all := f.messages(t, "")
	require.Len(t, all, 2)
	require.Equal(t, map[string]any{
		"message_id":      id,
		"to":              "ada@example.com",
		"subject":         "Welcome to Go 101",
		"text":            "See you in class.",
		"idempotency_key": "enrollment-1",
		"accepted_at":     start.Format(time.RFC3339),
	}, all[0])

	onlyBob := f.messages(t, "?to=bob@example.com")
	require.Len(t, onlyBob, 1)
	require.Equal(t, "enrollment-2", onlyBob[0]["idempotency_key"])
	require.Empty(t, f.messages(t, "?to=nobody@example.com"))
}

func TestSendIsIdempotentByKeyAndPayload(t *testing.T) {
	t.Parallel()
	f := setup(t, mail.Options{})

	first := f.send(t, "key-1", "ada@example.com", "Welcome")
	require.Equal(t, http.StatusAccepted, first.status)

	again := f.send(t, "key-1", "ada@example.com", "Welcome")
	require.Equal(t, http.StatusAccepted, again.status)
	require.Equal(t, first.body["message_id"], again.body["message_id"])
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))

	// Same payload in another field order and spacing is the same payload.
	reordered := f.call(t, http.MethodPost, "/v1/messages", map[string]string{"Idempotency-Key": "key-1"},
		`{ "text":"See you in class.", "subject":"Welcome", "to":"ada@example.com" }`)
	require.Equal(t, http.StatusAccepted, reordered.status)
	require.Equal(t, first.body["message_id"], reordered.body["message_id"])

	conflict := f.send(t, "key-1", "ada@example.com", "Another subject")
	require.Equal(t, http.StatusConflict, conflict.status)
	require.Equal(t, "idempotency_key_reused", conflict.errorCode())
	require.NotEmpty(t, conflict.body["error"].(map[string]any)["message"])

	require.Len(t, f.messages(t, ""), 1)
	require.Equal(t, mail.Stats{Accepted: 1, Duplicates: 2, Conflicts: 1}, f.stats(t))
}

func TestConcurrentIdenticalSendsStoreOneMessage(t *testing.T) {
	t.Parallel()
	f := setup(t, mail.Options{})

	const n = 20
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := do(t, http.DefaultClient, http.MethodPost, f.url+"/v1/messages",
				map[string]string{"Idempotency-Key": "storm"}, `{"to":"ada@example.com","subject":"Hi","text":"x"}`)
			if err == nil && r.status == http.StatusAccepted {
				ids[i], _ = r.body["message_id"].(string)
			}
		})
	}
	wg.Wait()

	for i := range n {
		require.NotEmpty(t, ids[i], "request %d failed", i)
		require.Equal(t, ids[0], ids[i])
	}
	require.Len(t, f.messages(t, ""), 1)
	require.Equal(t, mail.Stats{Accepted: 1, Duplicates: n - 1}, f.stats(t))
}

func TestSendValidation(t *testing.T) {
	t.Parallel()
	const ok = `{"to":"ada@example.com","subject":"Hi","text":"x"}`
	tests := []struct {
		name   string
		key    string
		body   string
		status int
		code   string
	}{
		{name: "missing key", body: ok, status: 400, code: "idempotency_key_required"},
		{name: "key too long", key: strings.Repeat("k", 256), body: ok, status: 400, code: "idempotency_key_required"},
		{name: "key with space", key: "a b", body: ok, status: 400, code: "idempotency_key_required"},
		{name: "empty body", key: "k", body: "", status: 400, code: "invalid_json"},
		{name: "not json", key: "k", body: "to=ada", status: 400, code: "invalid_json"},
		{name: "trailing data", key: "k", body: ok + "{}", status: 400, code: "invalid_json"},
		{name: "wrong type", key: "k", body: `{"to":1}`, status: 400, code: "invalid_json"},
		{name: "missing to", key: "k", body: `{"subject":"Hi","text":"x"}`, status: 400, code: "validation_failed"},
		{name: "bad address", key: "k", body: `{"to":"ada","subject":"Hi","text":"x"}`, status: 400, code: "validation_failed"},
		{name: "display name", key: "k", body: `{"to":"Ada <ada@example.com>","subject":"Hi","text":"x"}`, status: 400, code: "validation_failed"},
		{name: "missing subject", key: "k", body: `{"to":"ada@example.com","text":"x"}`, status: 400, code: "validation_failed"},
		{name: "missing text", key: "k", body: `{"to":"ada@example.com","subject":"Hi"}`, status: 400, code: "validation_failed"},
		{name: "too large", key: "k", body: `{"to":"ada@example.com","subject":"Hi","text":"` + strings.Repeat("x", 70<<10) + `"}`, status: 413, code: "payload_too_large"},
	}
	f := setup(t, mail.Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			header := map[string]string{}
			if tc.key != "" {
				header["Idempotency-Key"] = tc.key
			}
			r := f.call(t, http.MethodPost, "/v1/messages", header, tc.body)
			require.Equal(t, tc.status, r.status, "%v", r.body)
			require.Equal(t, tc.code, r.errorCode())
		})
	}
	t.Cleanup(func() {
		require.Empty(t, f.srv.Messages(""))
		require.Equal(t, int64(len(tests)), f.srv.Stats().Invalid)
	})
}

func TestRateLimitAnswers429WithRetryAfter(t *testing.T) {
	t.Parallel()
	f := setup(t, mail.Options{})
	f.control(t, "/_sandbox/config", `{"rate_per_second":2}`)
	cfg := f.call(t, http.MethodGet, "/_sandbox/config", nil, "")
	require.Equal(t, 2.0, cfg.body["rate_per_second"])

	// The bucket holds one second's worth: two sends pass, the third waits.
	require.Equal(t, http.StatusAccepted, f.send(t, "k1", "ada@example.com", "1").status)
	require.Equal(t, http.StatusAccepted, f.send(t, "k2", "ada@example.com", "2").status)
	limited := f.send(t, "k3", "ada@example.com", "3")
	require.Equal(t, http.StatusTooManyRequests, limited.status)
	require.Equal(t, "rate_limited", limited.errorCode())
	require.Equal(t, "1", limited.header.Get("Retry-After"))

	// Half a second at 2/s refills exactly one token.
	f.clock.Advance(500 * time.Millisecond)
	require.Equal(t, http.StatusAccepted, f.send(t, "k3", "ada@example.com", "3").status)
	require.Equal(t, http.StatusTooManyRequests, f.send(t, "k4", "ada@example.com", "4").status)

	require.Len(t, f.messages(t, ""), 3)
	require.Equal(t, mail.Stats{Accepted: 3, RateLimited: 2}, f.stats(t))
}

func TestRetryAfterRoundsUpToWholeSeconds(t *testing.T) {
	t.Parallel()
	f := setup(t, mail.Options{RatePerSecond: 0.4}) // one token every 2.5 s
	require.Equal(t, http.StatusAccepted, f.send(t, "k1", "ada@example.com", "1").status)
	limited := f.send(t, "k2", "ada@example.com", "2")
	require.Equal(t, http.StatusTooManyRequests, limited.status)
	require.Equal(t, "3", limited.header.Get("Retry-After"))
}

func TestDefaultRateIs100PerSecond(t *testing.T) {
	t.Parallel()
	f := setup(t, mail.Options{})
	for i := range 100 {
		require.Equal(t, http.StatusAccepted, f.send(t, fmt.Sprint("k", i), "ada@example.com", "s").status, "send %d", i)
	}
	require.Equal(t, http.StatusTooManyRequests, f.send(t, "k100", "ada@example.com", "s").status)
	f.clock.Advance(10 * time.Millisecond) // one token at 100/s
	require.Equal(t, http.StatusAccepted, f.send(t, "k100", "ada@example.com", "s").status)
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	f := setup(t, mail.Options{})
	for _, body := range []string{`{}`, `{"rate_per_second":0}`, `{"rate_per_second":-1}`, `{"rate_per_second":"fast"}`} {
		r := f.call(t, http.MethodPost, "/_sandbox/config", nil, body)
		require.Equal(t, http.StatusBadRequest, r.status, body)
	}
}

func TestFaultErrorAnswers503AndSendsNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, mail.Options{})
	f.control(t, "/_sandbox/faults", `{"mode":"error"}`)

	r := f.send(t, "k1", "ada@example.com", "Hi")
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	require.Equal(t, "provider_unavailable", r.errorCode())
	require.Empty(t, f.messages(t, ""))

	f.control(t, "/_sandbox/faults", `{"mode":"none"}`)
	require.Equal(t, http.StatusAccepted, f.send(t, "k1", "ada@example.com", "Hi").status)
	require.Equal(t, mail.Stats{Accepted: 1, FaultsInjected: 1}, f.stats(t))
}

func TestFaultSlowDelaysTheAnswer(t *testing.T) {
	t.Parallel()
	f := setup(t, mail.Options{})
	f.control(t, "/_sandbox/faults", `{"mode":"slow","latency_ms":2000}`)
	<-f.served

	answered := make(chan reply, 1)
	go func() { answered <- f.send(t, "k1", "ada@example.com", "Hi") }()

	require.Eventually(t, func() bool { return f.clock.Waiters() == 1 }, patience.Wait(), time.Millisecond)
	f.clock.Advance(1999 * time.Millisecond)
	require.Never(t, func() bool { return len(answered) > 0 }, 50*time.Millisecond, 5*time.Millisecond)

	f.clock.Advance(time.Millisecond)
	select {
	case r := <-answered:
		require.Equal(t, http.StatusAccepted, r.status)
	case <-time.After(patience.Wait()):
		t.Fatal("slow send did not answer after its latency")
	}
	require.Len(t, f.messages(t, ""), 1)
}

func TestFaultSlowClientGivingUpSendsNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, mail.Options{})
	f.control(t, "/_sandbox/faults", `{"mode":"slow","latency_ms":60000}`)
	<-f.served

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url+"/v1/messages",
		strings.NewReader(`{"to":"ada@example.com","subject":"Hi","text":"x"}`))
	require.NoError(t, err)
	req.Header.Set("Idempotency-Key", "k1")
	failed := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		failed <- err
	}()
	require.Eventually(t, func() bool { return f.clock.Waiters() == 1 }, patience.Wait(), time.Millisecond)
	cancel()
	require.Error(t, <-failed)

	select {
	case <-f.served: // the handler has returned
	case <-time.After(patience.Wait()):
		t.Fatal("handler did not notice the client leaving")
	}
	require.Empty(t, f.messages(t, ""))
}

func TestAcceptThenDropStoresMessageAndDropsConnection(t *testing.T) {
	t.Parallel()
	f := setup(t, mail.Options{})
	f.control(t, "/_sandbox/faults", `{"mode":"accept_then_drop"}`)

	// A fresh connection per request: on a reused one net/http would resend
	// the keyed POST by itself and hide the drop from the test.
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	body := `{"to":"ada@example.com","subject":"Hi","text":"x"}`
	key := map[string]string{"Idempotency-Key": "enrollment-7"}

	_, err := do(t, fresh, http.MethodPost, f.url+"/v1/messages", key, body)
	require.Error(t, err, "the client must see a connection error, not an answer")

	stored := f.messages(t, "")
	require.Len(t, stored, 1)
	require.Equal(t, "enrollment-7", stored[0]["idempotency_key"])

	// Still dropping: the retry is dropped too, and stores nothing new.
	_, err = do(t, fresh, http.MethodPost, f.url+"/v1/messages", key, body)
	require.Error(t, err)
	require.Len(t, f.messages(t, ""), 1)

	// Once the provider answers again, the retry learns the original id.
	f.control(t, "/_sandbox/faults", `{"mode":"none"}`)
	retry, err := do(t, fresh, http.MethodPost, f.url+"/v1/messages", key, body)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, retry.status)
	require.Equal(t, stored[0]["message_id"], retry.body["message_id"])
	require.Equal(t, mail.Stats{Accepted: 1, Duplicates: 2, FaultsInjected: 2}, f.stats(t))
}

func TestFaultRateIsDeterministicWithSeed(t *testing.T) {
	t.Parallel()
	f := setup(t, mail.Options{})
	pattern := func() string {
		f.control(t, "/_sandbox/reset", "")
		f.control(t, "/_sandbox/faults", `{"mode":"error","rate":0.5,"seed":42}`)
		var b strings.Builder
		for i := range 40 {
			r := f.send(t, fmt.Sprint("k", i), "ada@example.com", "Hi")
			require.Contains(t, []int{http.StatusAccepted, http.StatusServiceUnavailable}, r.status)
			b.WriteString(map[bool]string{true: "F", false: "."}[r.status == http.StatusServiceUnavailable])
		}
		return b.String()
	}

	first := pattern()
	require.Equal(t, first, pattern(), "the same seed must fault the same sends")
	faulted := strings.Count(first, "F")
	require.Greater(t, faulted, 0, first)
	require.Less(t, faulted, 40, first)
	require.Equal(t, mail.Stats{Accepted: int64(40 - faulted), FaultsInjected: int64(faulted)}, f.stats(t))
}

func TestFaultRateZeroNeverFaults(t *testing.T) {
	t.Parallel()
	f := setup(t, mail.Options{})
	f.control(t, "/_sandbox/faults", `{"mode":"error","rate":0}`)
	for i := range 10 {
		require.Equal(t, http.StatusAccepted, f.send(t, fmt.Sprint("k", i), "ada@example.com", "Hi").status)
	}
}

func TestFaultsValidation(t *testing.T) {
	t.Parallel()
	f := setup(t, mail.Options{})
	for _, body := range []string{
		`{}`,
		`{"mode":"explode"}`,
		`{"mode":"error","rate":1.5}`,
		`{"mode":"error","rate":-0.1}`,
		`{"mode":"slow"}`,
		`{"mode":"slow","latency_ms":-5}`,
		`{"mode":"slow","latency_ms":86400000}`,
		`not json`,
	} {
		r := f.call(t, http.MethodPost, "/_sandbox/faults", nil, body)
		require.Equal(t, http.StatusBadRequest, r.status, body)
		require.NotEmpty(t, r.errorCode(), body)
	}
	got := f.call(t, http.MethodGet, "/_sandbox/faults", nil, "")
	require.Equal(t, "none", got.body["mode"])
}

func TestResetClearsEverything(t *testing.T) {
	t.Parallel()
	f := setup(t, mail.Options{RatePerSecond: 50})
	require.Equal(t, http.StatusAccepted, f.send(t, "k1", "ada@example.com", "Hi").status)
	f.control(t, "/_sandbox/faults", `{"mode":"error","rate":0.3,"latency_ms":10}`)
	f.control(t, "/_sandbox/config", `{"rate_per_second":1}`)

	f.control(t, "/_sandbox/reset", "")

	require.Empty(t, f.messages(t, ""))
	require.Equal(t, mail.Stats{}, f.stats(t))
	faults := f.call(t, http.MethodGet, "/_sandbox/faults", nil, "")
	require.Equal(t, map[string]any{"mode": "none", "rate": 0.0, "latency_ms": 0.0}, faults.body)
	cfg := f.call(t, http.MethodGet, "/_sandbox/config", nil, "")
	require.Equal(t, 50.0, cfg.body["rate_per_second"])
	// The key is forgotten: another payload under it is a new message.
	require.Equal(t, http.StatusAccepted, f.send(t, "k1", "bob@example.com", "Other").status)
}

func TestUnknownRoutesAnswerWithTheErrorEnvelope(t *testing.T) {
	t.Parallel()
	f := setup(t, mail.Options{})
	r := f.call(t, http.MethodGet, "/v2/nothing", nil, "")
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, "not_found", r.errorCode())
	r = f.call(t, http.MethodDelete, "/v1/messages", nil, "")
	require.Equal(t, http.StatusMethodNotAllowed, r.status)
	require.Equal(t, "method_not_allowed", r.errorCode())
}

func TestStartServesAndShutdownReleasesSlowSends(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(start)
	srv := mail.New(mail.Options{Clock: clk})
	require.NoError(t, srv.Start("127.0.0.1:0"))
	require.Error(t, srv.Start("127.0.0.1:0"), "a second Start must fail")
	base := srv.URL()
	require.True(t, strings.HasPrefix(base, "http://127.0.0.1:"), base)

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	r, err := do(t, client, http.MethodPost, base+"/_sandbox/faults", nil, `{"mode":"slow","latency_ms":60000}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.status)

	answered := make(chan reply, 1)
	go func() {
		r, err := do(t, client, http.MethodPost, base+"/v1/messages", map[string]string{"Idempotency-Key": "k"},
			`{"to":"ada@example.com","subject":"Hi","text":"x"}`)
		if err == nil {
			answered <- r
		}
		close(answered)
	}()
	require.Eventually(t, func() bool { return clk.Waiters() == 1 }, patience.Wait(), time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), patience.Wait())
	defer cancel()
	require.NoError(t, srv.Shutdown(ctx))
	r, ok := <-answered
	require.True(t, ok, "the waiting send must get an answer")
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	require.Equal(t, "shutting_down", r.errorCode())

	_, err = client.Post(base+"/v1/messages", "application/json", bytes.NewReader(nil))
	require.Error(t, err, "the listener must be closed")
}
