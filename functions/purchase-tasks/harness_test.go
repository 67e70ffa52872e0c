package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/internal/payment"
	"github.com/clubdev/club/internal/relay"
	sandbox "github.com/clubdev/club/internal/sandbox/payment"
	"github.com/clubdev/club/internal/sfnclient"
	"github.com/clubdev/club/internal/store"
	"github.com/clubdev/club/internal/webhooksig"
	"github.com/clubdev/club/localcloud/invoke"
	"github.com/clubdev/club/localcloud/sfn"
	"github.com/clubdev/club/localcloud/sfn/clock"
	"github.com/clubdev/club/localcloud/sfn/integrations"
	"github.com/clubdev/club/localcloud/sfn/sfntest"
)

// The saga runs end to end in this test process: the team's Step Functions
// executor on a virtual clock, this function's real handler behind an
// in-process Lambda invoker, the DynamoDB adapters on kumo, the payment
// sandbox (on the same virtual clock) behind httptest, and the webhook
// handling of package purchase, to which the sandbox delivers in process.
// A 15-minute hold expires in microseconds.

var db *dynamodb.Client

func TestMain(m *testing.M) {
	srv := kumo.NewServer()
	db = dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		// kumo's X-Amz-Crc32 does not match its bodies; the data is fine.
		DisableValidateResponseChecksum: true,
	})
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

const (
	functionARN = "arn:aws:lambda:us-east-1:000000000000:function:" + functionName
	machineName = "club-purchase"
)

var (
	start         = time.Date(2026, 3, 3, 12, 0, 0, 0, time.UTC)
	webhookSecret = []byte("whsec-test")
	tableSeq      atomic.Int64
)

type env struct {
	t   *testing.T
	ctx context.Context
	clk *clock.Virtual

	sb       *sandbox.Server
	provider *provider
	// steps is the Step Functions executor (package sfntest); sfn is its
	// service and machine the purchase state machine's ARN.
	steps    *sfntest.Env
	sfn      *sfn.Service
	machine  string
	handler  *Handler
	webhooks *purchase.Webhooks
	svc      *purchase.Service
	store    *store.PurchaseAdapters
	outbox   *store.Outbox
	// workflows starts executions from outbox rows, as the relay does.
	workflows *relay.WorkflowStarter

	// dropWebhooks makes the webhook endpoint answer 503 without looking:
	// a provider whose notifications never arrive.
	dropWebhooks atomic.Bool
	mu           sync.Mutex
	deliveries   []delivery
	// platformFaults fail the next invocations of a step before the
	// handler runs, as the Lambda platform does (a killed sandbox, a
	// throttle, a client timeout); each is used once, in order.
	platformFaults map[string][]platformFault
	invocations    map[string]int // by step
	stopAuto       func()
}

// delivery is one webhook the endpoint handled.
type delivery struct {
	event   string
	status  int
	outcome purchase.WebhookOutcome
}

func setup(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), stopAuto: func() {}}
	var sbSrv *httptest.Server
	// Registered before the executor, so run after it stopped (cleanups run
	// last registered first).
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience.Wait())
		defer cancel()
		if e.sb != nil {
			_ = e.sb.Shutdown(ctx)
		}
		if sbSrv != nil {
			sbSrv.Close()
		}
	})
	// Step Functions on the virtual clock, with the Lambda integration
	// calling this function's real handler (added below, once built) as
	// the Lambda platform would, platform faults first.
	fns := sfntest.NewFunctions()
	fns.Intercept(func(_ string, payload []byte) (invoke.Result, error, bool) { return e.platformFault(payload) })
	e.steps = sfntest.New(t, sfntest.Options{Start: start, Manual: true, Integrations: integrations.Config{Invoker: fns}})
	e.clk, e.sfn = e.steps.Clock, e.steps.Service
	e.machine = e.steps.CreateStateMachine(machineName, sfntest.Definition(t, "purchase.asl.json",
		map[string]string{"PurchaseTasksFunctionArn": functionARN, "Partition": "aws"}))

	n := tableSeq.Add(1)
	cfg := store.Config{ClubTable: fmt.Sprintf("club-%d", n), OutboxTable: fmt.Sprintf("outbox-%d", n)}
	require.NoError(t, store.CreateTables(e.ctx, db, cfg))
	st, err := store.New(db, cfg)
	require.NoError(t, err)
	e.outbox = st.Outbox
	e.store, err = store.NewPurchaseAdapters(db, cfg)
	require.NoError(t, err)
	e.svc, err = purchase.NewService(purchase.Deps{Intensives: e.store.Intensives, Store: e.store.Purchases, Idempotency: st.Idempotency, Now: e.clk.Now})
	require.NoError(t, err)

	// The provider, on the virtual clock, delivering webhooks in process.
	e.sb = sandbox.New(sandbox.Options{
		WebhookURL: "http://club.test/webhooks/payments", WebhookSecret: webhookSecret,
		Clock: e.clk, HTTPClient: &http.Client{Transport: webhookEndpoint{e}},
		WebhookBackoff: 100 * time.Millisecond,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	sbSrv = httptest.NewServer(e.sb)
	client, err := payment.New(payment.Config{BaseURL: sbSrv.URL, Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	e.provider = &provider{PaymentProvider: client, now: e.clk.Now}

	sfnClient, err := sfnclient.New(e.steps.Client(), e.machine)
	require.NoError(t, err)

	e.workflows, err = relay.NewWorkflowStarter(
		relay.Workflows{events.TypePurchaseRequested: sfnClient, events.TypeRefundRequested: sfnClient},
		relay.NamedBy(events.TypeRefundRequested, relay.RefundExecution),
	)
	require.NoError(t, err)

	steps, err := purchase.NewSteps(purchase.StepsDeps{Store: e.store.Purchases, Payments: e.provider, Callbacks: sfnClient, Now: e.clk.Now})
	require.NoError(t, err)
	e.handler = NewHandler(steps, slog.New(slog.NewTextHandler(io.Discard, nil)))
	fns.Add(functionName, e.handler.Handle)
	e.webhooks, err = purchase.NewWebhooks(purchase.WebhooksDeps{
		Secret: webhookSecret, Store: e.store.Purchases, Callbacks: sfnClient, Now: e.clk.Now,
	})
	require.NoError(t, err)

	return e
}

// autoAdvance lets virtual time jump to the next timer whenever every
// execution is blocked: the hold deadline, retry backoffs, the provider's
// refund delay.
func (e *env) autoAdvance() { e.stopAuto = e.steps.AutoAdvance() }

// frozen runs f with virtual time stopped: for settling a payment at the
// sandbox and waiting for its webhook's effect, which happen outside what
// the clock tracks.
func (e *env) frozen(f func()) {
	e.clk.Hold()
	defer e.clk.Release()
	f()
}

// platformFault is how the Lambda platform fails an invocation: an error
// document (errorType empty for what Step Functions names Lambda.Unknown),
// or an error of the invoke call itself.
type platformFault struct {
	res invoke.Result
	err error
}

// killed is a function process ended without an error document of its
// own (out of memory): Step Functions names it Lambda.Unknown.
func killed() platformFault {
	return platformFault{res: sfntest.Failure("", "RequestId: 1 Error: Runtime exited with error: signal: killed")}
}

// clientTimeout is an Invoke call that outlived its client's deadline:
// Lambda.ClientExecutionTimeoutException.
func clientTimeout() platformFault {
	return platformFault{err: fmt.Errorf("invoke: %w", context.DeadlineExceeded)}
}

// failStep makes the next invocations of a step fail with faults.
func (e *env) failStep(step string, faults ...platformFault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.platformFaults == nil {
		e.platformFaults = map[string][]platformFault{}
	}
	e.platformFaults[step] = append(e.platformFaults[step], faults...)
}

// stepInvocations returns how many times a step's function was invoked.
func (e *env) stepInvocations(step string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.invocations[step]
}

func (e *env) platformFault(payload []byte) (invoke.Result, error, bool) {
	var in struct{ Step string }
	_ = json.Unmarshal(payload, &in)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.invocations == nil {
		e.invocations = map[string]int{}
	}
	e.invocations[in.Step]++
	q := e.platformFaults[in.Step]
	if len(q) == 0 {
		return invoke.Result{}, nil, false
	}
	e.platformFaults[in.Step] = q[1:]
	return q[0].res, q[0].err, true
}

// webhookEndpoint is POST /webhooks/payments, in process: the status codes
// are the ones the API route answers.
type webhookEndpoint struct{ e *env }

func (w webhookEndpoint) RoundTrip(r *http.Request) (*http.Response, error) {
	e := w.e
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	var ev purchase.WebhookEvent
	_ = json.Unmarshal(body, &ev)
	status, outcome := http.StatusServiceUnavailable, purchase.WebhookOutcome("")
	if !e.dropWebhooks.Load() {
		e.clk.Hold() // the handling takes no virtual time
		res, err := e.webhooks.Handle(r.Context(), r.Header.Get(webhooksig.Header), body)
		e.clk.Release()
		status, outcome = webhookStatus(err), res.Outcome
		if status == http.StatusInternalServerError {
			e.t.Logf("webhook %s: %v", ev.Type, err)
		}
	}
	e.mu.Lock()
	e.deliveries = append(e.deliveries, delivery{event: ev.Type, status: status, outcome: outcome})
	e.mu.Unlock()
	return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader("{}")), Header: http.Header{}, Request: r}, nil
}

func webhookStatus(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, purchase.ErrWebhookUnauthenticated):
		return http.StatusUnauthorized
	case errors.Is(err, purchase.ErrWebhookMalformed):
		return http.StatusBadRequest
	case errors.Is(err, purchase.ErrUnknownPayment):
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}

// outcomes returns the outcomes of the delivered webhooks of a type.
func (e *env) outcomes(eventType string) []purchase.WebhookOutcome {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []purchase.WebhookOutcome
	for _, d := range e.deliveries {
		if d.event == eventType && d.status == http.StatusOK {
			out = append(out, d.outcome)
		}
	}
	return out
}

// provider wraps the payment client to count calls and inject faults
// around them.
type provider struct {
	purchase.PaymentProvider
	now          func() time.Time
	getPayment   atomic.Int64
	createRefund atomic.Int64
	mu           sync.Mutex
	// paymentRequests are the virtual times of the payment requests sent.
	paymentRequests []time.Time
	// beforeRefund and afterRefund, if set, run around each CreateRefund
	// with its 1-based attempt number.
	beforeRefund func(attempt int64)
	afterRefund  func(attempt int64, err error)
}

func (p *provider) CreatePayment(ctx context.Context, key string, req purchase.PaymentRequest) (purchase.ProviderPayment, error) {
	p.mu.Lock()
	p.paymentRequests = append(p.paymentRequests, p.now())
	p.mu.Unlock()
	return p.PaymentProvider.CreatePayment(ctx, key, req)
}

// sentPaymentRequests returns the virtual times of the payment requests sent.
func (p *provider) sentPaymentRequests() []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.paymentRequests)
}

func (p *provider) GetPayment(ctx context.Context, id string) (payment.Payment, error) {
	p.getPayment.Add(1)
	return p.PaymentProvider.GetPayment(ctx, id)
}

func (p *provider) CreateRefund(ctx context.Context, key, paymentID string) (payment.Refund, error) {
	n := p.createRefund.Add(1)
	if p.beforeRefund != nil {
		p.beforeRefund(n)
	}
	rf, err := p.PaymentProvider.CreateRefund(ctx, key, paymentID)
	if p.afterRefund != nil {
		p.afterRefund(n, err)
	}
	return rf, err
}

// intensive creates an intensive (499.00 EUR, 15-minute hold).
func (e *env) intensive(capacity int) purchase.Intensive {
	e.t.Helper()
	in, err := e.svc.CreateIntensive(e.ctx, purchase.CreateIntensiveRequest{
		TeacherID: "teacher-1", Title: "Go in a week", Capacity: capacity,
		Price: purchase.Price{AmountCents: 49900, Currency: "EUR"},
	})
	require.NoError(e.t, err)
	return in
}

// buy is POST /intensives/{id}/purchases: a held seat and purchase.requested
// in the outbox.
func (e *env) buy(intensiveID, student string) purchase.Purchase {
	e.t.Helper()
	res, err := e.svc.Purchase(e.ctx, purchase.PurchaseRequest{
		IntensiveID: intensiveID, StudentID: student, IdempotencyKey: "key-" + events.NewID(), RequestFingerprint: "fp",
		Respond: func(purchase.Purchase) (idempotency.Response, error) { return idempotency.Response{Status: 202}, nil },
	})
	require.NoError(e.t, err)
	return res.Purchase
}

// startSaga does what the relay does with the purchase.requested row:
// StartExecution named by the purchase id with the envelope as input.
func (e *env) startSaga(p purchase.Purchase) string {
	e.t.Helper()
	rows, err := e.outbox.Unpublished(e.ctx, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), 1000)
	require.NoError(e.t, err)
	for _, r := range rows {
		if r.AggregateID == p.ID() && r.Type == events.TypePurchaseRequested {
			return e.steps.StartNamed(e.machine, purchase.ExecutionName(p.ID()), string(r.Payload))
		}
	}
	e.t.Fatalf("no purchase.requested row for %s", p.ID())
	return ""
}

// relayRefunds does what the relay does with a purchase's refund.requested
// rows: it starts <id>-refund from each (the same name for every row, so a
// republished row starts nothing new). It returns how many rows it relayed.
func (e *env) relayRefunds(purchaseID string) int {
	e.t.Helper()
	rows, err := e.outbox.Unpublished(e.ctx, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), 1000)
	require.NoError(e.t, err)
	n := 0
	for _, r := range rows {
		if r.AggregateID == purchaseID && r.Type == events.TypeRefundRequested {
			_, err := e.workflows.Publish(e.ctx, []relay.Message{relay.MessageOf(r)})
			require.NoError(e.t, err)
			n++
		}
	}
	return n
}

func (e *env) executionARN(name string) string { return sfntest.ExecutionARN(e.machine, name) }

// finish waits for an execution to end.
func (e *env) finish(arn string) sfn.Execution {
	e.t.Helper()
	return e.steps.Wait(arn)
}

func (e *env) purchase(id string) purchase.Purchase {
	e.t.Helper()
	p, err := e.store.Purchases.Get(e.ctx, id)
	require.NoError(e.t, err)
	return p
}

// seats returns (free, held, taken).
func (e *env) seats(intensiveID string) [3]int {
	e.t.Helper()
	in, err := e.store.Intensives.Get(e.ctx, intensiveID)
	require.NoError(e.t, err)
	return [3]int{in.SeatsFree(), in.SeatsHeld(), in.SeatsTaken()}
}

// waitFor polls cond until it holds, for at most patience.Wait() of real
// time.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := patience.Deadline()
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// tick advances virtual time a second at a time, each time once every
// execution is blocked, until cond holds (at most patience.Wait() of real
// time).
func (e *env) tick(what string, cond func() bool) {
	e.t.Helper()
	deadline := patience.Deadline()
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		ctx, cancel := context.WithTimeout(e.ctx, time.Second) // patience:exempt each step waits for idle at most a second before it moves the clock; tick has the deadline
		_ = e.clk.WaitIdle(ctx)
		cancel()
		if !cond() {
			e.clk.Advance(time.Second)
		}
	}
}

// waitingForPayment waits until the saga waits for the webhook: the purchase
// is payment_pending and its task token is stored.
func (e *env) waitingForPayment(id string) purchase.Purchase {
	e.t.Helper()
	var p purchase.Purchase
	e.waitFor("the saga to wait for the payment of "+id, func() bool {
		p = e.purchase(id)
		return p.Status() == purchase.StatusPaymentPending && p.TaskToken() != ""
	})
	return p
}

// settle plays the student at the checkout page, then waits for the
// purchase to leave status from, with virtual time stopped meanwhile.
func (e *env) settle(p purchase.Purchase, to sandbox.Status, from purchase.Status) purchase.Purchase {
	e.t.Helper()
	var got purchase.Purchase
	e.frozen(func() {
		_, err := e.sb.SettlePayment(p.PaymentID(), to)
		require.NoError(e.t, err)
		e.waitFor("the webhook's effect on "+p.ID(), func() bool {
			got = e.purchase(p.ID())
			return got.Status() != from
		})
	})
	return got
}

func statuses(p purchase.Purchase) []purchase.Status {
	var out []purchase.Status
	for _, h := range p.History() {
		out = append(out, h.Status)
	}
	return out
}

// at returns when the purchase entered a status.
func at(t *testing.T, p purchase.Purchase, s purchase.Status) time.Time {
	t.Helper()
	for _, h := range p.History() {
		if h.Status == s {
			return h.At
		}
	}
	t.Fatalf("purchase %s never was %s", p.ID(), s)
	return time.Time{}
}
