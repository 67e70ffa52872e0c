package sandboxhttp_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/sandbox/sandboxhttp"
)

func TestDropClosesTheConnectionWithoutAnswer(t *testing.T) {
	t.Parallel()
	drop := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { sandboxhttp.Drop(w) })
	for _, tc := range []struct {
		name  string
		http2 bool // HTTP/2 cannot be hijacked: Drop must abort instead
	}{
		{name: "http1 hijack"},
		{name: "http2 abort", http2: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewUnstartedServer(drop)
			srv.EnableHTTP2 = tc.http2
			srv.StartTLS()
			t.Cleanup(srv.Close)

			resp, err := srv.Client().Post(srv.URL, "application/json", strings.NewReader(`{}`))
			if err == nil {
				resp.Body.Close()
			}
			require.Error(t, err, "the client must get no answer")
		})
	}
}

func TestHandlerMapsErrorsToTheEnvelope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		err    error
		status int
		want   string
	}{
		{name: "sandbox error", err: sandboxhttp.Errorf(http.StatusConflict, "already_refunded", "twice"), status: 409,
			want: `{"error":{"code":"already_refunded","message":"twice"}}`},
		{name: "wrapped sandbox error", err: errors.Join(errors.New("context"), sandboxhttp.Invalid("to", "required")), status: 400,
			want: `{"error":{"code":"validation_failed","message":"to: required"}}`},
		{name: "other error", err: errors.New("disk on fire"), status: 500,
			want: `{"error":{"code":"internal_error","message":"internal error"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := sandboxhttp.Handler(discardLogger(), func(http.ResponseWriter, *http.Request) error { return tc.err })
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/", nil))
			require.Equal(t, tc.status, rec.Code)
			require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			require.JSONEq(t, tc.want, rec.Body.String())
		})
	}
}

func TestMuxAnswersUnknownRoutesWithTheEnvelope(t *testing.T) {
	t.Parallel()
	m := sandboxhttp.NewMux()
	m.Handle("POST /v1/things/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sandboxhttp.WriteJSON(w, http.StatusOK, map[string]string{"id": r.PathValue("id")})
	}))
	tests := []struct {
		method, path string
		status       int
		body         string
	}{
		{method: "POST", path: "/v1/things/42", status: 200, body: `{"id":"42"}`},
		{method: "GET", path: "/v1/things/42", status: 405, body: `{"error":{"code":"method_not_allowed","message":"GET /v1/things/42: Method Not Allowed"}}`},
		{method: "GET", path: "/nowhere", status: 404, body: `{"error":{"code":"not_found","message":"GET /nowhere: Not Found"}}`},
	}
	for _, tc := range tests {
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequestWithContext(context.Background(), tc.method, tc.path, nil))
		require.Equal(t, tc.status, rec.Code, tc.path)
		require.JSONEq(t, tc.body, rec.Body.String(), tc.path)
		require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
