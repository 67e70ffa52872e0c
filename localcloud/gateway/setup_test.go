package gateway_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/localcloud/gateway"
	"github.com/clubdev/club/localcloud/invoke"
	"github.com/clubdev/club/localcloud/issuer"
)

const testAudience = "club-local-client"

// RSA key generation is the slow part of these tests: two keys, made once.
var (
	issuerKey = sync.OnceValue(func() *rsa.PrivateKey { return mustKey() })
	otherKey  = sync.OnceValue(func() *rsa.PrivateKey { return mustKey() })
)

func mustKey() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, issuer.KeyBits)
	if err != nil {
		panic(err)
	}
	return k
}

// call is one invocation the fake invoker saw.
type call struct {
	function string
	event    events.APIGatewayV2HTTPRequest
	raw      map[string]any // the payload as generic JSON, to check field names
}

// fakeInvoker records events and answers with respond (default: a
// structured 200 echoing the function name).
type fakeInvoker struct {
	mu      sync.Mutex
	calls   []call
	respond func(ctx context.Context, function string, ev events.APIGatewayV2HTTPRequest) (invoke.Result, error)
}

var _ invoke.Invoker = (*fakeInvoker)(nil)

func (f *fakeInvoker) Invoke(ctx context.Context, function string, payload []byte) (invoke.Result, error) {
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return invoke.Result{}, err
	}
	var raw map[string]any
	if err := json.Unmarshal(payload, &raw); err != nil {
		return invoke.Result{}, err
	}
	f.mu.Lock()
	f.calls = append(f.calls, call{function: function, event: ev, raw: raw})
	respond := f.respond
	f.mu.Unlock()
	if respond != nil {
		return respond(ctx, function, ev)
	}
	return jsonResult(map[string]any{"statusCode": 200, "body": function}), nil
}

func (f *fakeInvoker) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

func jsonResult(v any) invoke.Result {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return invoke.Result{Payload: b}
}

type fixture struct {
	url     string
	issuer  *issuer.Issuer
	invoker *fakeInvoker
	gw      *gateway.Gateway
}

// setup starts a gateway on a free port with the local issuer mounted on it
// and a "cognito" authorizer trusting that issuer. With no routes given it
// serves the API's shape: an authorized enrollments route and a public one.
func setup(t *testing.T, configure ...func(*gateway.Config)) *fixture {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + ln.Addr().String()
	iss, err := issuer.New(base+"/issuer", issuerKey())
	require.NoError(t, err)

	inv := &fakeInvoker{}
	cfg := gateway.Config{
		Routes: []gateway.Route{
			{Method: "POST", Path: "/classes/{class_id}/enrollments", FunctionName: "api", Authorizer: "cognito"},
			{Method: "GET", Path: "/classes/{class_id}", FunctionName: "api", Authorizer: "cognito"},
			{Method: "POST", Path: "/webhooks/payments", FunctionName: "api"},
		},
		Authorizers: map[string]gateway.JWTAuthorizer{
			"cognito": {Issuer: iss.URL, Audience: []string{testAudience}},
		},
		Invoker: inv,
		Issuer:  iss,
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, c := range configure {
		c(&cfg)
	}
	gw, err := gateway.New(cfg)
	require.NoError(t, err)
	require.NoError(t, gw.StartListener(ln))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience.Wait())
		defer cancel()
		require.NoError(t, gw.Shutdown(ctx))
	})
	return &fixture{url: base, issuer: iss, invoker: inv, gw: gw}
}

// token signs a valid student token with the fixture's issuer.
func (f *fixture) token(t *testing.T, mutate ...func(*issuer.Claims)) string {
	t.Helper()
	c := issuer.Claims{Subject: "student-1", Audience: testAudience, Email: "s1@example.com", Groups: []string{"student"}}
	for _, m := range mutate {
		m(&c)
	}
	tok, err := f.issuer.Sign(c, time.Hour)
	require.NoError(t, err)
	return tok
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, method, url string, header http.Header, body io.Reader) response {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	require.NoError(t, err)
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func bearer(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

func requireMessage(t *testing.T, r response, status int, message string) {
	t.Helper()
	require.Equal(t, status, r.status, "body: %s", r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.JSONEq(t, `{"message":"`+message+`"}`, string(r.body))
	require.NotEmpty(t, r.header.Get("Apigw-Requestid"))
}

func jsonBody(s string) io.Reader { return bytes.NewBufferString(s) }
