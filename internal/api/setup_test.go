package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/api"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/inbox"
	"github.com/clubdev/club/internal/club/operation"
	"github.com/clubdev/club/internal/club/operation/operationtest"
	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/club/projection"
	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/club/purchase/purchasetest"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/store/memstore"
	"github.com/clubdev/club/internal/webhooksig"
)

// caller is who sends a request: the claims API Gateway's authorizer would
// pass, or none at all.
type caller struct {
	sub, groups, email string
	anonymous          bool
}

var (
	teacher      = caller{sub: "t-1", groups: "[teacher]", email: "tina@example.com"}
	otherTeacher = caller{sub: "t-2", groups: "[teacher]", email: "tom@example.com"}
	student      = caller{sub: "s-1", groups: "[student]", email: "ann@example.com"}
	otherStudent = caller{sub: "s-2", groups: "[student]", email: "bob@example.com"}
	operator     = caller{sub: "op-1", groups: "[operator]"}
	stranger     = caller{sub: "x-1"} // signed in, in no group
	anonymous    = caller{anonymous: true}
)

func (c caller) claims() map[string]string {
	m := map[string]string{"sub": c.sub, "iss": "https://issuer.example", "aud": "club-api"}
	if c.groups != "" {
		m["cognito:groups"] = c.groups
	}
	if c.email != "" {
		m["email"] = c.email
	}
	return m
}

// event builds an API Gateway HTTP API (format 2.0) event as the gateway
// sends it: lower-case header names, the route's key, claims in the
// authorizer context.
func event(method, path string, who caller, body string, headers map[string]string) events.APIGatewayV2HTTPRequest {
	h := map[string]string{"content-type": "application/json"}
	for k, v := range headers {
		h[strings.ToLower(k)] = v
	}
	path, query, _ := strings.Cut(path, "?")
	ev := events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       "$default",
		RawPath:        path,
		RawQueryString: query,
		Headers:        h,
		Body:           body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: "req-" + method + path,
			HTTP:      events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
		},
	}
	if !who.anonymous {
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: who.claims()},
		}
	}
	return ev
}

// result is a decoded answer.
type result struct {
	status  int
	headers map[string]string
	body    string
	doc     map[string]any // the JSON body
}

func (r result) errorCode() string {
	e, _ := r.doc["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func (r result) errorField() string {
	e, _ := r.doc["error"].(map[string]any)
	f, _ := e["field"].(string)
	return f
}

func (r result) str(key string) string {
	s, _ := r.doc[key].(string)
	return s
}

// syncBuffer collects log output from concurrent requests.
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

// fixture is a handler over the in-memory store, wired as functions/api
// wires the DynamoDB store.
type fixture struct {
	t    testing.TB
	ctx  context.Context
	mem  *memstore.Store
	h    *api.Handler
	logs *syncBuffer
	seq  atomic.Int64

	// The purchase domain: its in-memory store and the saga's side of the
	// webhook (task callbacks).
	purchases *purchasetest.Memory
	callbacks *fakeCallbacks

	// The operations (exports): their in-memory store, with the outbox
	// rows of their jobs.
	operations *operationtest.Memory
}

// webhookSecret is the payment provider's signing key in these tests.
var webhookSecret = []byte("whsec-api-test")

// setup returns a fixture; deps, if given, may replace ports before the
// handler is built.
func setup(t testing.TB, customize ...func(*api.Deps)) *fixture {
	t.Helper()
	f := &fixture{
		t: t, ctx: context.Background(), mem: memstore.New(), logs: &syncBuffer{},
		purchases: purchasetest.NewMemory(), callbacks: &fakeCallbacks{},
		operations: operationtest.NewMemory(),
	}
	svc, err := enrollment.NewService(enrollment.Deps{
		Store: f.mem.Enrollments, Classes: f.mem.Classes, Idempotency: f.mem.Idempotency,
		Policy: profile.PolicyCurrent, SeedProfiles: f.mem.Profiles,
	})
	require.NoError(t, err)
	purchases, err := purchase.NewService(purchase.Deps{
		Intensives: f.purchases.Intensives(), Store: f.purchases, Idempotency: f.purchases.Idempotency(),
	})
	require.NoError(t, err)
	webhooks, err := purchase.NewWebhooks(purchase.WebhooksDeps{
		Secret: webhookSecret, Store: f.purchases, Callbacks: f.callbacks,
	})
	require.NoError(t, err)
	operations, err := operation.NewService(operation.Deps{Store: f.operations})
	require.NoError(t, err)
	d := api.Deps{
		Classes: f.mem.Classes, Enrollments: svc, Projections: f.mem.Projections, Profiles: f.mem.Profiles,
		Purchases: purchases, Webhooks: webhooks, Operations: operations,
		Logger: obs.NewLogger(f.logs, obs.Options{Level: slog.LevelDebug, Function: "api"}),
		NewID:  func() string { return fmt.Sprintf("class-%d", f.seq.Add(1)) },
	}
	for _, c := range customize {
		c(&d)
	}
	f.h, err = api.New(d)
	require.NoError(t, err)
	return f
}

func (f *fixture) handle(ev events.APIGatewayV2HTTPRequest) result {
	f.t.Helper()
	resp, err := f.h.Handle(f.ctx, ev)
	require.NoError(f.t, err, "the handler answers every failure over HTTP")
	checkContract(f.t, ev, resp)
	r := result{status: resp.StatusCode, headers: resp.Headers, body: resp.Body}
	require.Equal(f.t, "application/json", resp.Headers["Content-Type"])
	require.NoError(f.t, json.Unmarshal([]byte(resp.Body), &r.doc), "body is a JSON object: %s", resp.Body)
	return r
}

func (f *fixture) do(method, path string, who caller, body string, headers ...string) result {
	f.t.Helper()
	h := map[string]string{}
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = headers[i+1]
	}
	return f.handle(event(method, path, who, body, h))
}

// createClass creates a class of teacher through the API.
func (f *fixture) createClass(who caller, capacity int) string {
	f.t.Helper()
	r := f.do("POST", "/classes", who, fmt.Sprintf(`{"title":"Go","capacity":%d,"starts_at":"2026-04-01T17:00:00Z"}`, capacity))
	require.Equal(f.t, 201, r.status, r.body)
	return r.str("class_id")
}

// enroll enrolls who in a class through the API.
func (f *fixture) enroll(who caller, classID, key string) result {
	f.t.Helper()
	return f.do("POST", "/classes/"+classID+"/enrollments", who, "", "Idempotency-Key", key)
}

// project runs the roster and analytics consumers over every outbox row, as
// the pipeline would (twice: duplicates must change nothing).
func (f *fixture) project() {
	f.t.Helper()
	rows, err := f.mem.Outbox.Unpublished(f.ctx, time.Now().Add(time.Hour), 1000)
	require.NoError(f.t, err)
	for range 2 {
		for _, row := range rows {
			env, err := row.Envelope()
			require.NoError(f.t, err)
			for _, p := range []*projection.Projector{projection.NewRosterProjector(f.mem.Inbox), projection.NewStatsProjector(f.mem.Inbox)} {
				if err := p.Apply(f.ctx, env); err != nil {
					require.ErrorIs(f.t, err, inbox.ErrDuplicate)
				}
			}
		}
	}
}

// outboxCount is the number of events written.
func (f *fixture) outboxCount() int {
	f.t.Helper()
	rows, err := f.mem.Outbox.Unpublished(f.ctx, time.Now().Add(time.Hour), 1000)
	require.NoError(f.t, err)
	return len(rows)
}

func (f *fixture) seatsTaken(classID string) int {
	f.t.Helper()
	c, err := f.mem.Classes.Get(f.ctx, classID)
	require.NoError(f.t, err)
	return c.SeatsTaken()
}

// createIntensive creates an intensive of teacher through the API.
func (f *fixture) createIntensive(who caller, capacity, holdSeconds int) string {
	f.t.Helper()
	r := f.do("POST", "/intensives", who, fmt.Sprintf(
		`{"title":"Go in production","capacity":%d,"price":{"amount_cents":4900,"currency":"EUR"},"hold_seconds":%d}`, capacity, holdSeconds))
	require.Equal(f.t, 201, r.status, r.body)
	return r.str("intensive_id")
}

// buy starts a purchase of a seat of an intensive through the API.
func (f *fixture) buy(who caller, intensiveID, key string) result {
	f.t.Helper()
	return f.do("POST", "/intensives/"+intensiveID+"/purchases", who, "", "Idempotency-Key", key)
}

// export asks for an export of a class's roster through the API.
func (f *fixture) export(who caller, classID string) result {
	f.t.Helper()
	return f.do("POST", "/classes/"+classID+"/exports", who, "")
}

// webhook sends a provider event, signed now with the test secret.
func (f *fixture) webhook(event map[string]any) result {
	f.t.Helper()
	body, err := json.Marshal(event)
	require.NoError(f.t, err)
	return f.do("POST", "/webhooks/payments", anonymous, string(body),
		webhooksig.Header, webhooksig.Sign(webhookSecret, time.Now(), body))
}

// fakeCallbacks completes the saga's waits; a token is single-use, as in
// Step Functions.
type fakeCallbacks struct {
	mu      sync.Mutex
	settled map[string]string // token → "success" or the error name
}

func (c *fakeCallbacks) settle(token, outcome string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.settled == nil {
		c.settled = map[string]string{}
	}
	if _, done := c.settled[token]; done {
		return purchase.ErrTaskClosed
	}
	c.settled[token] = outcome
	return nil
}

func (c *fakeCallbacks) SendTaskSuccess(_ context.Context, token, _ string) error {
	return c.settle(token, "success")
}

func (c *fakeCallbacks) SendTaskFailure(_ context.Context, token, errorName, _ string) error {
	return c.settle(token, errorName)
}

func (c *fakeCallbacks) outcome(token string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.settled[token]
}

// The real services fit the API's ports.
var (
	_ api.Enrollments     = (*enrollment.Service)(nil)
	_ api.Purchases       = (*purchase.Service)(nil)
	_ api.PaymentWebhooks = (*purchase.Webhooks)(nil)
	_ api.Operations      = (*operation.Service)(nil)
)
