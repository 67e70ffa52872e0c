package gateway_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/gateway"
	"github.com/clubdev/club/localcloud/invoke"
)

func jsonField(t *testing.T, doc []byte, field string) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(doc, &m))
	return string(m[field])
}

func TestEventHasPayloadFormat2Shape(t *testing.T) {
	t.Parallel()
	f := setup(t)
	header := bearer(f.token(t))
	header["X-Multi"] = []string{"a", "b"}
	header.Set("Content-Type", "application/json")
	header.Set("User-Agent", "club-test/1.0")
	header.Set("Cookie", "session=abc; theme=dark")
	header.Set("Idempotency-Key", "key-12345678")

	before := time.Now()
	r := do(t, "POST", f.url+"/classes/c%2042/enrollments?x=1&x=2&y=a%20b&empty=", header, jsonBody(`{"note":"hi"}`))
	require.Equal(t, http.StatusOK, r.status, string(r.body))

	calls := f.invoker.Calls()
	require.Len(t, calls, 1)
	require.Equal(t, "api", calls[0].function)
	ev := calls[0].event

	require.Equal(t, "2.0", ev.Version)
	require.Equal(t, "POST /classes/{class_id}/enrollments", ev.RouteKey)
	require.Equal(t, "/classes/c%2042/enrollments", ev.RawPath)
	require.Equal(t, "x=1&x=2&y=a%20b&empty=", ev.RawQueryString)
	require.Equal(t, map[string]string{"x": "1,2", "y": "a b", "empty": ""}, ev.QueryStringParameters)
	require.Equal(t, map[string]string{"class_id": "c 42"}, ev.PathParameters, "path parameters are decoded")
	require.Equal(t, []string{"session=abc", "theme=dark"}, ev.Cookies)
	require.Equal(t, `{"note":"hi"}`, ev.Body)
	require.False(t, ev.IsBase64Encoded)

	for name := range ev.Headers {
		require.Equal(t, strings.ToLower(name), name, "header names are lower case")
	}
	require.Equal(t, "a,b", ev.Headers["x-multi"], "repeated headers are joined with commas")
	require.Equal(t, "key-12345678", ev.Headers["idempotency-key"])
	require.Equal(t, "application/json", ev.Headers["content-type"])
	require.Equal(t, strings.TrimPrefix(f.url, "http://"), ev.Headers["host"])
	require.Equal(t, "13", ev.Headers["content-length"])
	require.Equal(t, "127.0.0.1", ev.Headers["x-forwarded-for"])
	require.Equal(t, "http", ev.Headers["x-forwarded-proto"])
	require.NotContains(t, ev.Headers, "cookie", "cookies travel in the cookies field")

	rc := ev.RequestContext
	require.Equal(t, "000000000000", rc.AccountID)
	require.Equal(t, gateway.DefaultAPIID, rc.APIID)
	require.Equal(t, "$default", rc.Stage)
	require.Equal(t, ev.RouteKey, rc.RouteKey)
	require.Equal(t, r.header.Get("Apigw-Requestid"), rc.RequestID, "the request id is the one the client sees")
	require.Equal(t, strings.TrimPrefix(f.url, "http://"), rc.DomainName)
	require.Equal(t, "127.0.0.1", rc.DomainPrefix)
	require.Equal(t, "POST", rc.HTTP.Method)
	require.Equal(t, "/classes/c 42/enrollments", rc.HTTP.Path)
	require.Equal(t, "HTTP/1.1", rc.HTTP.Protocol)
	require.Equal(t, "127.0.0.1", rc.HTTP.SourceIP)
	require.Equal(t, "club-test/1.0", rc.HTTP.UserAgent)
	require.GreaterOrEqual(t, rc.TimeEpoch, before.UnixMilli())
	require.LessOrEqual(t, rc.TimeEpoch, time.Now().UnixMilli())
	parsed, err := time.Parse("02/Jan/2006:15:04:05 -0700", rc.Time)
	require.NoError(t, err)
	require.Equal(t, rc.TimeEpoch/1000, parsed.Unix())

	// Field names on the wire are aws-lambda-go's.
	for _, field := range []string{"version", "routeKey", "rawPath", "rawQueryString", "cookies", "headers",
		"queryStringParameters", "pathParameters", "requestContext", "body", "isBase64Encoded"} {
		require.Contains(t, calls[0].raw, field)
	}
	rcRaw := calls[0].raw["requestContext"].(map[string]any)
	require.NotContains(t, rcRaw, "authentication", "present only with mutual TLS, as on AWS")
	require.Contains(t, rcRaw, "authorizer")
}

func TestEventWithoutQueryOrBody(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := do(t, "GET", f.url+"/classes/c1", bearer(f.token(t)), nil)
	require.Equal(t, http.StatusOK, r.status)
	ev := f.invoker.Calls()[0].event
	require.Empty(t, ev.RawQueryString)
	require.Nil(t, ev.QueryStringParameters)
	require.Nil(t, ev.Cookies)
	require.Empty(t, ev.Body)
	require.False(t, ev.IsBase64Encoded)
}

func TestBinaryBodiesAreBase64Encoded(t *testing.T) {
	t.Parallel()
	binary := []byte{0x00, 0x01, 0xfe, 0xff, 'a'}
	tests := []struct {
		name        string
		contentType string
		body        []byte
		wantBase64  bool
	}{
		{"octet stream", "application/octet-stream", binary, true},
		{"image", "image/png", []byte("PNG but declared as image"), true},
		{"form", "application/x-www-form-urlencoded", []byte("a=1&b=2"), true},
		{"invalid UTF-8 declared as text", "text/plain", binary, true},
		{"json", "application/json; charset=utf-8", []byte(`{"a":"é"}`), false},
		{"problem json", "application/problem+json", []byte(`{"a":1}`), false},
		{"plain text", "text/plain", []byte("héllo"), false},
		{"untyped text", "", []byte("hello"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			header := http.Header{}
			if tt.contentType != "" {
				header.Set("Content-Type", tt.contentType)
			}
			r := do(t, "POST", f.url+"/webhooks/payments", header, bytes.NewReader(tt.body))
			require.Equal(t, http.StatusOK, r.status)
			ev := f.invoker.Calls()[0].event
			require.Equal(t, tt.wantBase64, ev.IsBase64Encoded)
			if tt.wantBase64 {
				got, err := base64.StdEncoding.DecodeString(ev.Body)
				require.NoError(t, err)
				require.Equal(t, tt.body, got)
			} else {
				require.Equal(t, string(tt.body), ev.Body)
			}
		})
	}
}

func TestResponseTranslation(t *testing.T) {
	t.Parallel()
	binary := []byte{0x89, 'P', 'N', 'G', 0x00, 0xff}
	tests := []struct {
		name       string
		payload    string
		wantStatus int
		wantHeader http.Header // each listed header must have exactly these values
		wantBody   []byte
	}{
		{
			name:       "structured",
			payload:    `{"statusCode":201,"headers":{"content-type":"application/json","x-trace":"t1","location":"/enrollments/e1"},"body":"{\"enrollment_id\":\"e1\"}"}`,
			wantStatus: 201,
			wantHeader: http.Header{"Content-Type": {"application/json"}, "X-Trace": {"t1"}, "Location": {"/enrollments/e1"}},
			wantBody:   []byte(`{"enrollment_id":"e1"}`),
		},
		{
			name:       "multi-value headers replace single ones",
			payload:    `{"statusCode":200,"headers":{"x-a":"single","x-b":"kept"},"multiValueHeaders":{"x-a":["1","2"]},"body":"ok"}`,
			wantStatus: 200,
			wantHeader: http.Header{"X-A": {"1", "2"}, "X-B": {"kept"}},
			wantBody:   []byte("ok"),
		},
		{
			name:       "cookies become set-cookie headers",
			payload:    `{"statusCode":200,"cookies":["s=1; Path=/; HttpOnly","t=2"],"body":""}`,
			wantStatus: 200,
			wantHeader: http.Header{"Set-Cookie": {"s=1; Path=/; HttpOnly", "t=2"}},
			wantBody:   []byte{},
		},
		{
			name:       "base64 body is decoded",
			payload:    `{"statusCode":200,"headers":{"content-type":"image/png"},"isBase64Encoded":true,"body":"` + base64.StdEncoding.EncodeToString(binary) + `"}`,
			wantStatus: 200,
			wantHeader: http.Header{"Content-Type": {"image/png"}},
			wantBody:   binary,
		},
		{
			name:       "bare JSON object is a 200 JSON body",
			payload:    `{"hello":"world"}`,
			wantStatus: 200,
			wantHeader: http.Header{"Content-Type": {"application/json"}},
			wantBody:   []byte(`{"hello":"world"}`),
		},
		{
			name:       "bare JSON array",
			payload:    `[1,2,3]`,
			wantStatus: 200,
			wantHeader: http.Header{"Content-Type": {"application/json"}},
			wantBody:   []byte(`[1,2,3]`),
		},
		{
			name:       "error status passes through",
			payload:    `{"statusCode":409,"headers":{"content-type":"application/json"},"body":"{\"error\":{\"code\":\"class_full\"}}"}`,
			wantStatus: 409,
			wantBody:   []byte(`{"error":{"code":"class_full"}}`),
		},
		{
			name:       "no content type means none is invented",
			payload:    `{"statusCode":204}`,
			wantStatus: 204,
			wantHeader: http.Header{"Content-Type": nil},
			wantBody:   []byte{},
		},
		{
			name:       "function cannot forge framing headers or the request id",
			payload:    `{"statusCode":200,"headers":{"content-length":"999","apigw-requestid":"forged"},"body":"abc"}`,
			wantStatus: 200,
			wantHeader: http.Header{"Content-Length": {"3"}},
			wantBody:   []byte("abc"),
		},
		{name: "not JSON", payload: `hello`, wantStatus: 500},
		{name: "status code out of range", payload: `{"statusCode":1000,"body":"x"}`, wantStatus: 500},
		{name: "status code not a number", payload: `{"statusCode":"200","body":"x"}`, wantStatus: 500},
		{name: "bad base64", payload: `{"statusCode":200,"isBase64Encoded":true,"body":"***"}`, wantStatus: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.invoker.respond = func(context.Context, string, events.APIGatewayV2HTTPRequest) (invoke.Result, error) {
				return invoke.Result{Payload: []byte(tt.payload)}, nil
			}
			r := do(t, "POST", f.url+"/webhooks/payments", nil, jsonBody(`{}`))
			if tt.wantStatus == 500 {
				requireMessage(t, r, 500, "Internal Server Error")
				return
			}
			require.Equal(t, tt.wantStatus, r.status, "body: %s", r.body)
			for name, values := range tt.wantHeader {
				require.Equal(t, []string(values), r.header.Values(name), "header %s", name)
			}
			require.Equal(t, tt.wantBody, r.body)
			require.NotEqual(t, "forged", r.header.Get("Apigw-Requestid"))
			require.NotEmpty(t, r.header.Get("Apigw-Requestid"))
		})
	}
}

func TestFunctionFailuresDoNotLeak(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		timeout    time.Duration
		respond    func(ctx context.Context) (invoke.Result, error)
		wantStatus int
		wantMsg    string
	}{
		{
			name: "function error",
			respond: func(context.Context) (invoke.Result, error) {
				return invoke.Result{FunctionError: "Unhandled", Payload: []byte(`{"errorMessage":"db password is hunter2","errorType":"*errors.errorString"}`)}, nil
			},
			wantStatus: 500, wantMsg: "Internal Server Error",
		},
		{
			name: "crash",
			respond: func(context.Context) (invoke.Result, error) {
				return invoke.Result{FunctionError: "Unhandled", Payload: []byte(`{"errorMessage":"Runtime exited with error: exit status 2 hunter2","errorType":"Runtime.ExitError"}`)}, nil
			},
			wantStatus: 500, wantMsg: "Internal Server Error",
		},
		{
			name: "invoker failure",
			respond: func(context.Context) (invoke.Result, error) {
				return invoke.Result{}, errors.New("function club-api hunter2 not found")
			},
			wantStatus: 500, wantMsg: "Internal Server Error",
		},
		{
			name:    "integration timeout",
			timeout: 50 * time.Millisecond,
			respond: func(ctx context.Context) (invoke.Result, error) {
				<-ctx.Done() // a function that never answers
				return invoke.Result{}, ctx.Err()
			},
			wantStatus: 503, wantMsg: "Service Unavailable",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, func(c *gateway.Config) { c.IntegrationTimeout = tt.timeout })
			f.invoker.respond = func(ctx context.Context, _ string, _ events.APIGatewayV2HTTPRequest) (invoke.Result, error) {
				return tt.respond(ctx)
			}
			r := do(t, "POST", f.url+"/webhooks/payments", nil, jsonBody(`{}`))
			requireMessage(t, r, tt.wantStatus, tt.wantMsg)
			require.NotContains(t, string(r.body), "hunter2")
			for _, values := range r.header {
				for _, v := range values {
					require.NotContains(t, v, "hunter2")
				}
			}
		})
	}
}

func TestRouteSpecificity(t *testing.T) {
	t.Parallel()
	// The example of API Gateway's routing documentation, plus method and
	// $default cases.
	routes := []gateway.Route{
		{Method: "GET", Path: "/pets/dog/1", FunctionName: "exact"},
		{Method: "GET", Path: "/pets/dog/{id}", FunctionName: "dog-by-id"},
		{Method: "GET", Path: "/pets/{proxy+}", FunctionName: "pets-greedy"},
		{Method: "ANY", Path: "/{proxy+}", FunctionName: "root-greedy"},
		{Method: "ANY", Path: "/items/{id}", FunctionName: "items-any"},
		{Method: "DELETE", Path: "/items/{id}", FunctionName: "items-delete"},
		{Method: "GET", Path: "/", FunctionName: "root"},
	}
	tests := []struct {
		method, path string
		wantFunction string
		wantRouteKey string
		wantParams   map[string]string
	}{
		{"GET", "/pets/dog/1", "exact", "GET /pets/dog/1", nil},
		{"GET", "/pets/dog/2", "dog-by-id", "GET /pets/dog/{id}", map[string]string{"id": "2"}},
		{"GET", "/pets/dog/a%2Fb", "dog-by-id", "GET /pets/dog/{id}", map[string]string{"id": "a/b"}},
		{"GET", "/pets/cat/1", "pets-greedy", "GET /pets/{proxy+}", map[string]string{"proxy": "cat/1"}},
		{"GET", "/pets/dog/1/toys", "pets-greedy", "GET /pets/{proxy+}", map[string]string{"proxy": "dog/1/toys"}},
		{"POST", "/pets/cat/1", "root-greedy", "ANY /{proxy+}", map[string]string{"proxy": "pets/cat/1"}},
		{"DELETE", "/items/7", "items-delete", "DELETE /items/{id}", map[string]string{"id": "7"}},
		{"PATCH", "/items/7", "items-any", "ANY /items/{id}", map[string]string{"id": "7"}},
		{"GET", "/", "root", "GET /", nil},
		{"POST", "/", "default", "$default", nil},
	}
	f := setup(t, func(c *gateway.Config) {
		c.Routes = append(routes, gateway.Route{Path: "$default", FunctionName: "default"})
	})
	for _, tt := range tests {
		r := do(t, tt.method, f.url+tt.path, nil, nil)
		require.Equal(t, http.StatusOK, r.status, "%s %s", tt.method, tt.path)
		require.Equal(t, tt.wantFunction, string(r.body), "%s %s", tt.method, tt.path)
	}
	calls := f.invoker.Calls()
	require.Len(t, calls, len(tests))
	for i, tt := range tests {
		require.Equal(t, tt.wantRouteKey, calls[i].event.RouteKey, "%s %s", tt.method, tt.path)
		require.Equal(t, tt.wantParams, calls[i].event.PathParameters, "%s %s", tt.method, tt.path)
	}
}

func TestUnmatchedRequestIsNotFound(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, target := range []struct{ method, path string }{
		{"GET", "/nope"},
		{"DELETE", "/classes/c1"},          // path matches, method does not
		{"GET", "/classes/c1/enrollments"}, // method does not match
		{"GET", "/classes/"},               // an empty variable matches nothing
		{"GET", "/Classes/c1"},             // paths are case-sensitive
	} {
		r := do(t, target.method, f.url+target.path, nil, nil)
		requireMessage(t, r, http.StatusNotFound, "Not Found")
	}
	require.Empty(t, f.invoker.Calls())
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	const limit = 1024
	f := setup(t, func(c *gateway.Config) { c.MaxBodyBytes = limit })

	r := do(t, "POST", f.url+"/webhooks/payments", nil, bytes.NewReader(make([]byte, limit+1)))
	requireMessage(t, r, http.StatusRequestEntityTooLarge, "Request Entity Too Large")

	// A chunked body has no Content-Length: the limit applies while reading.
	chunked := io.MultiReader(strings.NewReader(strings.Repeat("x", limit)), strings.NewReader("y"))
	r = do(t, "POST", f.url+"/webhooks/payments", nil, chunked)
	requireMessage(t, r, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
	require.Empty(t, f.invoker.Calls(), "an oversized request never reaches the function")

	r = do(t, "POST", f.url+"/webhooks/payments", nil, strings.NewReader(strings.Repeat("x", limit)))
	require.Equal(t, http.StatusOK, r.status, "a body at the limit is accepted")
	require.Len(t, f.invoker.Calls(), 1)
}

func TestDefaultBodyLimitIsTenMegabytes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := do(t, "POST", f.url+"/webhooks/payments", nil, bytes.NewReader(make([]byte, gateway.DefaultMaxBodyBytes+1)))
	requireMessage(t, r, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
	require.Empty(t, f.invoker.Calls())
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		routes   []gateway.Route
		wantFunc bool // once ready, the request reaches the function
	}{
		{name: "answered by the gateway", routes: nil},
		{name: "a catch-all does not take it", routes: []gateway.Route{{Path: "$default", FunctionName: "default"}, {Method: "ANY", Path: "/{proxy+}", FunctionName: "greedy"}}},
		{name: "an explicit route takes it once ready", routes: []gateway.Route{{Method: "GET", Path: "/healthz", FunctionName: "health"}}, wantFunc: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ready atomic.Bool
			f := setup(t, func(c *gateway.Config) {
				c.Routes = tt.routes
				c.Health = ready.Load
			})

			r := do(t, "GET", f.url+"/healthz", nil, nil)
			require.Equal(t, http.StatusServiceUnavailable, r.status)
			require.JSONEq(t, `{"status":"unavailable"}`, string(r.body))
			require.Empty(t, f.invoker.Calls(), "nothing is invoked before the cloud is ready")

			ready.Store(true)
			r = do(t, "GET", f.url+"/healthz", nil, nil)
			require.Equal(t, http.StatusOK, r.status)
			if tt.wantFunc {
				require.Equal(t, "health", string(r.body))
				require.Len(t, f.invoker.Calls(), 1)
			} else {
				require.JSONEq(t, `{"status":"ok"}`, string(r.body))
				require.Empty(t, f.invoker.Calls())
			}
		})
	}
}

func TestBusyPortIsAnErrorNamingTheAddress(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })

	gw, err := gateway.New(gateway.Config{Addr: ln.Addr().String(), Invoker: &fakeInvoker{}})
	require.NoError(t, err)
	err = gw.Start()
	require.Error(t, err)
	require.Contains(t, err.Error(), ln.Addr().String())
	require.NoError(t, gw.Shutdown(context.Background()), "shutting down a gateway that never started is a no-op")
}

func TestStartAndShutdown(t *testing.T) {
	t.Parallel()
	gw, err := gateway.New(gateway.Config{Addr: "127.0.0.1:0", Invoker: &fakeInvoker{}})
	require.NoError(t, err)
	require.NoError(t, gw.Start())
	require.Error(t, gw.Start(), "a gateway starts once")
	url := gw.URL()
	require.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), url)

	r := do(t, "GET", url+"/healthz", nil, nil)
	require.Equal(t, http.StatusOK, r.status)

	require.NoError(t, gw.Shutdown(context.Background()))
	require.NoError(t, gw.Shutdown(context.Background()), "a second shutdown is harmless")
	_, err = http.Get(url + "/healthz")
	require.Error(t, err, "nothing listens after shutdown")
}

func TestShutdownWaitsForInFlightRequests(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	inv := &fakeInvoker{respond: func(context.Context, string, events.APIGatewayV2HTTPRequest) (invoke.Result, error) {
		close(entered)
		<-release
		return jsonResult(map[string]any{"statusCode": 200, "body": "finished"}), nil
	}}
	gw, err := gateway.New(gateway.Config{
		Addr:    "127.0.0.1:0",
		Invoker: inv,
		Routes:  []gateway.Route{{Method: "GET", Path: "/slow", FunctionName: "slow"}},
	})
	require.NoError(t, err)
	require.NoError(t, gw.Start())

	got := make(chan response, 1)
	go func() { got <- do(t, "GET", gw.URL()+"/slow", nil, nil) }()
	<-entered

	shutdown := make(chan error, 1)
	go func() { shutdown <- gw.Shutdown(context.Background()) }()
	close(release)

	r := <-got
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "finished", string(r.body))
	require.NoError(t, <-shutdown)
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	ok := func(c *gateway.Config) {}
	tests := []struct {
		name   string
		mutate func(*gateway.Config)
		want   string
	}{
		{"valid", ok, ""},
		{"no invoker", func(c *gateway.Config) { c.Invoker = nil }, "invoker is required"},
		{"greedy not last", func(c *gateway.Config) {
			c.Routes = append(c.Routes, gateway.Route{Method: "GET", Path: "/a/{p+}/b", FunctionName: "f"})
		}, "must be the last segment"},
		{"unknown authorizer", func(c *gateway.Config) {
			c.Routes = append(c.Routes, gateway.Route{Method: "GET", Path: "/a", FunctionName: "f", Authorizer: "nope"})
		}, `unknown authorizer "nope"`},
		{"conflicting routes", func(c *gateway.Config) {
			c.Routes = append(c.Routes,
				gateway.Route{Method: "GET", Path: "/a/{x}", FunctionName: "f"},
				gateway.Route{Method: "get", Path: "/a/{y}", FunctionName: "g"})
		}, "conflicts"},
		{"bad method", func(c *gateway.Config) {
			c.Routes = append(c.Routes, gateway.Route{Method: "FETCH", Path: "/a", FunctionName: "f"})
		}, "unsupported method"},
		{"relative path", func(c *gateway.Config) {
			c.Routes = append(c.Routes, gateway.Route{Method: "GET", Path: "a", FunctionName: "f"})
		}, "must start with /"},
		{"no function", func(c *gateway.Config) {
			c.Routes = append(c.Routes, gateway.Route{Method: "GET", Path: "/a"})
		}, "function name is required"},
		{"two defaults", func(c *gateway.Config) {
			c.Routes = append(c.Routes, gateway.Route{Path: "$default", FunctionName: "f"}, gateway.Route{Path: "$default", FunctionName: "g"})
		}, "more than one $default"},
		{"authorizer without audience", func(c *gateway.Config) {
			c.Authorizers["cognito"] = gateway.JWTAuthorizer{Issuer: "http://x"}
		}, "at least one audience"},
		{"bad identity source", func(c *gateway.Config) {
			c.Authorizers["cognito"] = gateway.JWTAuthorizer{Issuer: "http://x", Audience: []string{"a"}, IdentitySource: "$request.body.token"}
		}, "identity source"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := gateway.Config{
				Invoker:     &fakeInvoker{},
				Routes:      []gateway.Route{{Method: "GET", Path: "/classes/{id}", FunctionName: "api", Authorizer: "cognito"}},
				Authorizers: map[string]gateway.JWTAuthorizer{"cognito": {Issuer: "http://127.0.0.1:3000/issuer", Audience: []string{"a"}}},
			}
			tt.mutate(&cfg)
			_, err := gateway.New(cfg)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}
