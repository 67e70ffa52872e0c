package clubctl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/clubctl"
	"github.com/clubdev/club/internal/stackfile"
	"github.com/clubdev/club/localcloud/gateway"
	"github.com/clubdev/club/localcloud/invoke"
	"github.com/clubdev/club/localcloud/issuer"
)

const audience = "club-local"

// recorder is a hand-written invoke.Invoker that keeps the events it gets.
type recorder struct {
	mu     sync.Mutex
	events []events.APIGatewayV2HTTPRequest
}

func (r *recorder) Invoke(_ context.Context, _ string, payload []byte) (invoke.Result, error) {
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return invoke.Result{}, err
	}
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	return invoke.Result{Payload: []byte(`{"ok":true}`)}, nil
}

func (r *recorder) Events() []events.APIGatewayV2HTTPRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]events.APIGatewayV2HTTPRequest(nil), r.events...)
}

// The issuer key is generated once for the whole package: it is slow.
var keyPEM = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "clubctl-key-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "issuer-key.pem")
	if _, err := issuer.LoadOrCreateKey(path); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
})

type env struct {
	stackFile string
	apiURL    string
	invoker   *recorder
}

// setup plays the local cloud: it stores the issuer key beside a stack file,
// starts a gateway whose authorizer trusts that issuer, and writes the
// stack file the way the local cloud does.
func setup(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	pemData, err := keyPEM()
	require.NoError(t, err)
	keyPath := filepath.Join(dir, "issuer-key.pem")
	require.NoError(t, os.WriteFile(keyPath, pemData, 0o600))
	key, err := issuer.LoadKey(keyPath)
	require.NoError(t, err)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + ln.Addr().String()
	iss, err := issuer.New(base+"/issuer", key)
	require.NoError(t, err)

	rec := &recorder{}
	gw, err := gateway.New(gateway.Config{
		Routes:      []gateway.Route{{Method: "GET", Path: "/me", FunctionName: "api", Authorizer: "cognito"}},
		Authorizers: map[string]gateway.JWTAuthorizer{"cognito": {Issuer: iss.URL, Audience: []string{audience}}},
		Invoker:     rec,
		Issuer:      iss,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	require.NoError(t, gw.StartListener(ln))
	t.Cleanup(func() { require.NoError(t, gw.Shutdown(context.Background())) })

	stackFile := filepath.Join(dir, "stack.json")
	require.NoError(t, (&stackfile.Stack{
		APIURL:        base,
		IssuerURL:     iss.URL,
		JWTAudience:   audience,
		IssuerKeyFile: "issuer-key.pem", // relative to the stack file
	}).Save(stackFile))
	return &env{stackFile: stackFile, apiURL: base, invoker: rec}
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = clubctl.Execute(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func callAPI(t *testing.T, e *env, token string) int {
	t.Helper()
	req, err := http.NewRequest("GET", e.apiURL+"/me", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func TestTokenIsAcceptedByTheGateway(t *testing.T) {
	t.Parallel()
	e := setup(t)

	code, stdout, stderr := run(t, "token", "--stack-file", e.stackFile,
		"--sub", "teacher-7", "--role", "teacher", "--email", "t7@example.com")
	require.Equal(t, 0, code, stderr)
	require.Empty(t, stderr)
	token := strings.TrimSpace(stdout)
	require.Equal(t, token+"\n", stdout, "only the token is printed")

	require.Equal(t, http.StatusOK, callAPI(t, e, token))
	evs := e.invoker.Events()
	require.Len(t, evs, 1)
	claims := evs[0].RequestContext.Authorizer.JWT.Claims
	require.Equal(t, "teacher-7", claims["sub"])
	require.Equal(t, "[teacher]", claims["cognito:groups"])
	require.Equal(t, "t7@example.com", claims["email"])
	require.Equal(t, audience, claims["aud"])
	require.Equal(t, "id", claims["token_use"])
}

func TestTokenJSONOutput(t *testing.T) {
	t.Parallel()
	e := setup(t)
	before := time.Now().Truncate(time.Second)
	code, stdout, stderr := run(t, "token", "--json", "--stack-file", e.stackFile, "--sub", "s-1", "--role", "student", "--ttl", "10m")
	after := time.Now()
	require.Equal(t, 0, code, stderr)
	var out struct {
		Token     string    `json:"token"`
		TokenType string    `json:"token_type"`
		Sub       string    `json:"sub"`
		Role      string    `json:"role"`
		Audience  string    `json:"audience"`
		Issuer    string    `json:"issuer"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &out))
	require.Equal(t, "Bearer", out.TokenType)
	require.Equal(t, "s-1", out.Sub)
	require.Equal(t, "student", out.Role)
	require.Equal(t, audience, out.Audience)
	require.Equal(t, e.apiURL+"/issuer", out.Issuer)
	require.False(t, out.ExpiresAt.Before(before.Add(10*time.Minute)), "expires at %s", out.ExpiresAt)
	require.False(t, out.ExpiresAt.After(after.Add(10*time.Minute)), "expires at %s", out.ExpiresAt)

	require.Equal(t, http.StatusOK, callAPI(t, e, out.Token))
	claims := e.invoker.Events()[0].RequestContext.Authorizer.JWT.Claims
	require.Equal(t, "[student]", claims["cognito:groups"])
	require.NotContains(t, claims, "email", "no e-mail unless asked for")
}

func TestTokenAudienceFlagOverridesTheStack(t *testing.T) {
	t.Parallel()
	e := setup(t)
	code, stdout, stderr := run(t, "token", "--stack-file", e.stackFile, "--sub", "s-1", "--role", "student", "--audience", "another-client")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, http.StatusUnauthorized, callAPI(t, e, strings.TrimSpace(stdout)),
		"the gateway refuses a token minted for another audience")
	require.Empty(t, e.invoker.Events())
}

func TestTokenErrors(t *testing.T) {
	t.Parallel()
	e := setup(t)

	noIssuer := filepath.Join(t.TempDir(), "aws-stack.json")
	require.NoError(t, (&stackfile.Stack{APIURL: "https://api.example.com", JWTAudience: audience}).Save(noIssuer))
	missingKey := filepath.Join(t.TempDir(), "stack.json")
	require.NoError(t, (&stackfile.Stack{IssuerURL: "http://127.0.0.1:3000/issuer", JWTAudience: audience, IssuerKeyFile: "gone.pem"}).Save(missingKey))

	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"missing sub and role", []string{"token", "--stack-file", e.stackFile}, 2, `required flag(s) "role", "sub" not set`},
		{"unknown role", []string{"token", "--stack-file", e.stackFile, "--sub", "x", "--role", "admin"}, 2, "must be one of student|teacher|operator"},
		{"blank sub", []string{"token", "--stack-file", e.stackFile, "--sub", " ", "--role", "student"}, 2, "--sub"},
		{"bad ttl", []string{"token", "--stack-file", e.stackFile, "--sub", "x", "--role", "student", "--ttl", "soon"}, 2, `invalid argument "soon" for "--ttl"`},
		{"negative ttl", []string{"token", "--stack-file", e.stackFile, "--sub", "x", "--role", "student", "--ttl", "-1h"}, 2, "--ttl"},
		{"ttl above a day", []string{"token", "--stack-file", e.stackFile, "--sub", "x", "--role", "student", "--ttl", "25h"}, 2, "at most 24h"},
		{"bad email", []string{"token", "--stack-file", e.stackFile, "--sub", "x", "--role", "student", "--email", "nobody"}, 2, "not an e-mail address"},
		{"unknown flag", []string{"token", "--stack-file", e.stackFile, "--sub", "x", "--role", "student", "--group", "a"}, 2, "unknown flag: --group"},
		{"stray argument", []string{"token", "--stack-file", e.stackFile, "--sub", "x", "--role", "student", "extra"}, 2, "unknown command"},
		{"no stack file", []string{"token", "--stack-file", filepath.Join(t.TempDir(), "none.json"), "--sub", "x", "--role", "student"}, 1, "make run"},
		{"stack without a local issuer", []string{"token", "--stack-file", noIssuer, "--sub", "x", "--role", "student"}, 1, "only be minted for the local cloud"},
		{"issuer key missing", []string{"token", "--stack-file", missingKey, "--sub", "x", "--role", "student"}, 1, "has the local cloud run?"},
		{"unknown command", []string{"tokne"}, 2, `unknown command "tokne"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := run(t, tt.args...)
			require.Equal(t, tt.wantCode, code, "stderr: %s", stderr)
			require.Empty(t, stdout, "nothing but results goes to stdout")
			require.Contains(t, stderr, tt.wantErr)
			if tt.wantCode == 2 {
				require.Contains(t, stderr, "--help' for usage")
			}
		})
	}
}

func TestHelpDocumentsTheCommands(t *testing.T) {
	t.Parallel()
	code, stdout, _ := run(t, "--help")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "clubctl token --sub student-1 --role student")
	require.Contains(t, stdout, "--json")
	require.Contains(t, stdout, "--stack-file")
	require.Contains(t, stdout, ".club/stack.json")

	code, stdout, _ = run(t, "token", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "cognito:groups")
	require.Contains(t, stdout, "student, teacher, operator")
}
