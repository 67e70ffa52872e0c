package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
)

// fakeSource counts the actions that reach it: a refused action must not.
type fakeSource struct {
	resolves, redrives atomic.Int32
}

func (f *fakeSource) Status(context.Context) (any, error) {
	return map[string]any{"queues": []any{}}, nil
}
func (f *fakeSource) Gauges(ctx context.Context) (any, error)       { return f.Status(ctx) }
func (f *fakeSource) DeadLetterQueues(context.Context) (any, error) { return []any{}, nil }
func (f *fakeSource) DeadLetters(_ context.Context, q string, _ int) (any, error) {
	return nil, NotFound(errors.New("no queue " + q))
}
func (f *fakeSource) Purchases(context.Context) (any, error)            { return map[string]any{}, nil }
func (f *fakeSource) Purchase(context.Context, string) (any, error)     { return map[string]any{}, nil }
func (f *fakeSource) Find(context.Context, string) (any, error)         { return map[string]any{}, nil }
func (f *fakeSource) Capacity(context.Context, url.Values) (any, error) { return map[string]any{}, nil }
func (f *fakeSource) Resolve(_ context.Context, r Resolution) (any, error) {
	f.resolves.Add(1)
	return map[string]any{"by": r.By, "reason": r.Reason}, nil
}
func (f *fakeSource) PastHour(context.Context) ([]Sample, error) {
	return []Sample{{At: time.Date(2026, 1, 1, 11, 30, 0, 0, time.UTC), Queues: map[string]QueueSample{"Q": {Visible: 7}}, Source: "cloudwatch"}}, nil
}
func (f *fakeSource) PlanRedrive(context.Context, RedriveRequest) (RedrivePlan, error) {
	f.redrives.Add(1)
	return RedrivePlan{Queue: "Q", DLQ: "QDLQ", ToMove: 1, Run: func(context.Context, func(int)) (int, error) { return 1, nil }}, nil
}

func setup(t *testing.T, opts Options) (*Console, *fakeSource) {
	t.Helper()
	src := &fakeSource{}
	c, err := New(src, opts)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c, src
}

func do(c http.Handler, method, path, token, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("X-Console-Token", token)
	}
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, req)
	return rec
}

func code(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var e struct{ Error struct{ Code string } }
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e), rec.Body.String())
	return e.Error.Code
}

var actions = []struct{ path, body string }{
	{"/api/purchases/p-1/resolve", `{"action":"release","reason":"no payment"}`},
	{"/api/dlqs/notifications/redrive", `{"max":1,"reason":"provider back"}`},
	{"/api/redrives/redrive-1/cancel", `{}`},
}

func TestReadOnlyRefusesEveryAction(t *testing.T) {
	t.Parallel()
	c, src := setup(t, Options{})
	for _, a := range actions {
		rec := do(c, http.MethodPost, a.path, c.Token(), a.body)
		require.Equal(t, http.StatusForbidden, rec.Code, a.path)
		require.Equal(t, CodeReadOnly, code(t, rec), a.path)
	}
	require.Zero(t, src.resolves.Load())
	require.Zero(t, src.redrives.Load())
}

func TestActionsNeedTheSessionToken(t *testing.T) {
	t.Parallel()
	c, src := setup(t, Options{AllowActions: true, By: "ops-ada"})
	for _, token := range []string{"", "not-the-token", c.Token() + "x"} {
		for _, a := range actions {
			rec := do(c, http.MethodPost, a.path, token, a.body)
			require.Equal(t, http.StatusForbidden, rec.Code, a.path)
			require.Equal(t, CodeTokenInvalid, code(t, rec), a.path)
		}
	}
	require.Zero(t, src.resolves.Load())
	require.Zero(t, src.redrives.Load())

	// With the token, the action reaches the source with who and why.
	rec := do(c, http.MethodPost, actions[0].path, c.Token(), actions[0].body)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.JSONEq(t, `{"by":"ops-ada","reason":"no payment"}`, rec.Body.String())
	require.EqualValues(t, 1, src.resolves.Load())
}

func TestTheTokenIsInThePageOnly(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, Options{AllowActions: true})
	page := do(c, http.MethodGet, "/", "", "")
	require.Equal(t, http.StatusOK, page.Code)
	require.Contains(t, page.Body.String(), `<meta name="console-token" content="`+c.Token()+`">`)
	for _, path := range []string{"/api/status", "/api/session", "/api/dlqs"} {
		require.NotContains(t, do(c, http.MethodGet, path, "", "").Body.String(), c.Token(), path)
	}
	c2, _ := setup(t, Options{})
	require.NotEqual(t, c.Token(), c2.Token(), "a token per session")
}

func TestAnActionNeedsAReason(t *testing.T) {
	t.Parallel()
	c, src := setup(t, Options{AllowActions: true})
	for _, path := range []string{actions[0].path, actions[1].path} {
		rec := do(c, http.MethodPost, path, c.Token(), `{"action":"release","reason":"  "}`)
		require.Equal(t, http.StatusBadRequest, rec.Code, path)
		require.Equal(t, CodeInvalidRequest, code(t, rec))
	}
	require.Zero(t, src.resolves.Load()+src.redrives.Load())
}

func TestForeignHostIsRefused(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, Options{Hosts: []string{"127.0.0.1:4590"}})
	req := httptest.NewRequest(http.MethodGet, "/api/status", nil)
	req.Host = "evil.example:4590"
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, req)
	require.Equal(t, http.StatusForbidden, rec.Code)
	require.Equal(t, CodeHostNotAllowed, code(t, rec))
}

func TestErrorsHaveStableCodes(t *testing.T) {
	t.Parallel()
	var audit bytes.Buffer
	c, _ := setup(t, Options{Audit: &audit})
	for path, want := range map[string]string{
		"/api/dlqs/nowhere":     CodeNotFound,
		"/api/nothing":          CodeNotFound,
		"/api/dlqs/q?max=lots":  CodeInvalidRequest,
		"/api/redrives/unknown": CodeNotFound,
	} {
		require.Equal(t, want, code(t, do(c, http.MethodGet, path, "", "")), path)
	}
	require.Empty(t, audit.String(), "reads are not audited")
}

func TestChartsStartWithThePastHour(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c, _ := setup(t, Options{SampleEvery: time.Hour, Now: func() time.Time { return now }})
	var got struct {
		Points []Sample `json:"points"`
	}
	require.Eventually(t, func() bool {
		require.NoError(t, json.Unmarshal(do(c, http.MethodGet, "/api/history", "", "").Body.Bytes(), &got))
		return len(got.Points) > 0 && got.Points[0].Source == "cloudwatch"
	}, patience.Wait(), 10*time.Millisecond)
	require.Equal(t, int64(7), got.Points[0].Queues["Q"].Visible)
}
