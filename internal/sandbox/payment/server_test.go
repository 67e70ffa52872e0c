package payment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/clock"
	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/internal/sandbox/payment"
	"github.com/clubdev/club/internal/webhooksig"
)

var (
	start  = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	secret = []byte("whsec_sandbox_test")
)

// waitFor bounds every real-time wait of these tests (internal/patience).
var waitFor = patience.Wait()

// receiver is the API's webhook endpoint as the sandbox sees it.
type receiver struct {
	mu         sync.Mutex
	deliveries []delivery
	answers    []int // statuses to answer with, in order; 200 once used up
}

type delivery struct {
	body      []byte
	signature string
	event     payment.Event
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var ev payment.Event
	_ = json.Unmarshal(body, &ev)
	rc.mu.Lock()
	rc.deliveries = append(rc.deliveries, delivery{body: body, signature: r.Header.Get(webhooksig.Header), event: ev})
	status := http.StatusOK
	if len(rc.answers) > 0 {
		status, rc.answers = rc.answers[0], rc.answers[1:]
	}
	rc.mu.Unlock()
	w.WriteHeader(status)
}

func (rc *receiver) got() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.deliveries...)
}

// waitDeliveries waits until exactly n deliveries have arrived and returns them.
func (rc *receiver) waitDeliveries(t *testing.T, n int) []delivery {
	t.Helper()
	require.Eventually(t, func() bool { return len(rc.got()) >= n }, waitFor, time.Millisecond,
		"want %d webhook deliveries", n)
	got := rc.got()
	require.Len(t, got, n)
	return got
}

type fixture struct {
	srv      *payment.Server
	url      string
	clock    *clock.Fake
	receiver *receiver
}

func setup(t *testing.T, opts payment.Options, answers ...int) *fixture {
	t.Helper()
	f := &fixture{clock: clock.NewFake(start), receiver: &receiver{answers: answers}}
	hook := httptest.NewServer(f.receiver)
	t.Cleanup(hook.Close)
	opts.Clock = f.clock
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.WebhookURL = hook.URL + "/webhooks/payments"
	opts.WebhookSecret = secret
	f.srv = payment.New(opts)
	hs := httptest.NewServer(f.srv)
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

func (r reply) str(field string) string {
	s, _ := r.body[field].(string)
	return s
}

func do(client *http.Client, method, url, key, body string) (reply, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	r := reply{status: resp.StatusCode, header: resp.Header}
	if len(raw) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			return reply{}, fmt.Errorf("decode %s: %w", raw, err)
		}
	}
	return r, nil
}

func (f *fixture) call(t *testing.T, method, path, key, body string) reply {
	t.Helper()
	r, err := do(http.DefaultClient, method, f.url+path, key, body)
	require.NoError(t, err)
	return r
}

func (f *fixture) createPayment(t *testing.T, key, reference string) reply {
	t.Helper()
	r := f.call(t, http.MethodPost, "/v1/payments", key,
		fmt.Sprintf(`{"amount_cents":4900,"currency":"EUR","reference":%q}`, reference))
	require.Equal(t, http.StatusCreated, r.status, "%v", r.body)
	return r
}

// paidPayment creates a payment, succeeds it and consumes its webhook.
func (f *fixture) paidPayment(t *testing.T, reference string) string {
	t.Helper()
	id := f.createPayment(t, "pay-"+reference, reference).str("payment_id")
	before := len(f.receiver.got())
	require.Equal(t, http.StatusOK, f.call(t, http.MethodPost, "/_sandbox/payments/"+id+"/succeed", "", "").status)
	f.receiver.waitDeliveries(t, before+1)
	return id
}

func (f *fixture) control(t *testing.T, path, body string) {
	t.Helper()
	r := f.call(t, http.MethodPost, path, "", body)
	require.Equal(t, http.StatusOK, r.status, "%s: %v", path, r.body)
}

func (f *fixture) refund(t *testing.T, key, paymentID string) reply {
	t.Helper()
	return f.call(t, http.MethodPost, "/v1/refunds", key, fmt.Sprintf(`{"payment_id":%q}`, paymentID))
}

// verify checks a delivery's signature as the API will.
func (f *fixture) verify(t *testing.T, d delivery) {
	t.Helper()
	require.NoError(t, webhooksig.Verify(secret, d.signature, d.body, f.clock.Now(), 0))
}

func TestCreatePaymentIsIdempotent(t *testing.T) {
	t.Parallel()
	f := setup(t, payment.Options{})

	first := f.createPayment(t, "purchase-1", "purchase-1")
	id := first.str("payment_id")
	require.True(t, strings.HasPrefix(id, "pay_"), id)
	require.Equal(t, "pending", first.str("status"))
	require.Equal(t, f.url+"/checkout/"+id, first.str("checkout_url"))
	require.Empty(t, first.header.Get("Idempotent-Replayed"))

	again := f.createPayment(t, "purchase-1", "purchase-1")
	require.Equal(t, first.body, again.body)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))

	conflict := f.call(t, http.MethodPost, "/v1/payments", "purchase-1", `{"amount_cents":100,"currency":"EUR","reference":"purchase-1"}`)
	require.Equal(t, http.StatusConflict, conflict.status)
	require.Equal(t, "idempotency_key_reused", conflict.errorCode())

	other := f.createPayment(t, "purchase-2", "purchase-2")
	require.NotEqual(t, id, other.str("payment_id"))

	got := f.call(t, http.MethodGet, "/v1/payments/"+id, "", "")
	require.Equal(t, http.StatusOK, got.status)
	require.Equal(t, map[string]any{
		"payment_id":   id,
		"status":       "pending",
		"reference":    "purchase-1",
		"amount_cents": 4900.0,
		"currency":     "EUR",
		"checkout_url": f.url + "/checkout/" + id,
		"created_at":   start.Format(time.RFC3339),
	}, got.body)

	missing := f.call(t, http.MethodGet, "/v1/payments/pay_nope", "", "")
	require.Equal(t, http.StatusNotFound, missing.status)
	require.Equal(t, "payment_not_found", missing.errorCode())
}

// GET /_sandbox/payments?reference=R lists what the provider holds for one
// purchase: a retried request under the same key adds nothing.
func TestListPaymentsByReference(t *testing.T) {
	t.Parallel()
	f := setup(t, payment.Options{})
	first := f.createPayment(t, "pay-p-1", "p-1")
	f.createPayment(t, "pay-p-1", "p-1") // the same key again
	f.createPayment(t, "pay-p-2", "p-2")

	got := f.call(t, http.MethodGet, "/_sandbox/payments?reference=p-1", "", "")
	require.Equal(t, http.StatusOK, got.status)
	list, _ := got.body["payments"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, first.str("payment_id"), list[0].(map[string]any)["payment_id"])

	all := f.call(t, http.MethodGet, "/_sandbox/payments", "", "")
	list, _ = all.body["payments"].([]any)
	require.Len(t, list, 2)
	none := f.call(t, http.MethodGet, "/_sandbox/payments?reference=p-9", "", "")
	require.Equal(t, []any{}, none.body["payments"])
}

func TestCreatePaymentValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		key    string
		body   string
		status int
		code   string
	}{
		{name: "missing key", body: `{"amount_cents":1,"currency":"EUR","reference":"r"}`, status: 400, code: "idempotency_key_required"},
		{name: "not json", key: "k", body: `{`, status: 400, code: "invalid_json"},
		{name: "missing amount", key: "k", body: `{"currency":"EUR","reference":"r"}`, status: 400, code: "validation_failed"},
		{name: "zero amount", key: "k", body: `{"amount_cents":0,"currency":"EUR","reference":"r"}`, status: 400, code: "validation_failed"},
		{name: "negative amount", key: "k", body: `{"amount_cents":-5,"currency":"EUR","reference":"r"}`, status: 400, code: "validation_failed"},
		{name: "fractional amount", key: "k", body: `{"amount_cents":1.5,"currency":"EUR","reference":"r"}`, status: 400, code: "invalid_json"},
		{name: "lower-case currency", key: "k", body: `{"amount_cents":1,"currency":"eur","reference":"r"}`, status: 400, code: "validation_failed"},
		{name: "missing reference", key: "k", body: `{"amount_cents":1,"currency":"EUR"}`, status: 400, code: "validation_failed"},
		{name: "too large", key: "k", body: `{"reference":"` + strings.Repeat("r", 70<<10) + `"}`, status: 413, code: "payload_too_large"},
	}
	f := setup(t, payment.Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := f.call(t, http.MethodPost, "/v1/payments", tc.key, tc.body)
			require.Equal(t, tc.status, r.status, "%v", r.body)
			require.Equal(t, tc.code, r.errorCode())
		})
	}
}

func TestSettlingPaymentSendsSignedWebhook(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		outcome, status, event, opposite string
	}{
		{outcome: "succeed", status: "succeeded", event: "payment.succeeded", opposite: "fail"},
		{outcome: "fail", status: "failed", event: "payment.failed", opposite: "succeed"},
	} {
		t.Run(tc.outcome, func(t *testing.T) {
			t.Parallel()
			f := setup(t, payment.Options{})
			id := f.createPayment(t, "purchase-1", "purchase-1").str("payment_id")

			settled := f.call(t, http.MethodPost, "/_sandbox/payments/"+id+"/"+tc.outcome, "", "")
			require.Equal(t, http.StatusOK, settled.status)
			require.Equal(t, tc.status, settled.str("status"))
			require.Equal(t, tc.status, f.call(t, http.MethodGet, "/v1/payments/"+id, "", "").str("status"))

			d := f.receiver.waitDeliveries(t, 1)[0]
			f.verify(t, d)
			var body map[string]any
			require.NoError(t, json.Unmarshal(d.body, &body))
			require.True(t, strings.HasPrefix(d.event.EventID, "evt_"), d.event.EventID)
			require.Equal(t, map[string]any{
				"event_id":     d.event.EventID,
				"type":         tc.event,
				"payment_id":   id,
				"reference":    "purchase-1",
				"amount_cents": 4900.0,
			}, body)

			// Repeating the outcome changes nothing and sends nothing; the
			// opposite outcome is refused.
			require.Equal(t, http.StatusOK, f.call(t, http.MethodPost, "/_sandbox/payments/"+id+"/"+tc.outcome, "", "").status)
			refused := f.call(t, http.MethodPost, "/_sandbox/payments/"+id+"/"+tc.opposite, "", "")
			require.Equal(t, http.StatusConflict, refused.status)
			require.Equal(t, "invalid_transition", refused.errorCode())
			require.Len(t, f.srv.Events(), 1)
			// The receiver has the POST before the sandbox has read its 2xx
			// answer and counted the delivery: wait for the count.
			require.Eventually(t, func() bool { return f.srv.Events()[0].Delivered == 1 }, waitFor, time.Millisecond,
				"the delivery is counted once")
		})
	}
}

func TestSettleUnknownPayment(t *testing.T) {
	t.Parallel()
	f := setup(t, payment.Options{})
	r := f.call(t, http.MethodPost, "/_sandbox/payments/pay_nope/succeed", "", "")
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, "payment_not_found", r.errorCode())
	id := f.createPayment(t, "k", "r").str("payment_id")
	r = f.call(t, http.MethodPost, "/_sandbox/payments/"+id+"/explode", "", "")
	require.Equal(t, http.StatusNotFound, r.status)
}

func TestWebhookIsRetriedWithBackoffAndTheSameEventID(t *testing.T) {
	t.Parallel()
	f := setup(t, payment.Options{WebhookBackoff: time.Second}, 500, 503)
	id := f.createPayment(t, "k", "purchase-1").str("payment_id")
	f.control(t, "/_sandbox/payments/"+id+"/succeed", "")

	f.receiver.waitDeliveries(t, 1)
	require.Eventually(t, func() bool { return f.clock.Waiters() == 1 }, waitFor, time.Millisecond)
	f.clock.Advance(999 * time.Millisecond)
	require.Len(t, f.receiver.got(), 1, "no retry before the backoff")
	f.clock.Advance(time.Millisecond)

	f.receiver.waitDeliveries(t, 2)
	require.Eventually(t, func() bool { return f.clock.Waiters() == 1 }, waitFor, time.Millisecond)
	f.clock.Advance(time.Second)
	require.Len(t, f.receiver.got(), 2, "the second wait doubles")
	f.clock.Advance(time.Second)

	got := f.receiver.waitDeliveries(t, 3)
	for _, d := range got {
		require.Equal(t, got[0].body, d.body, "every attempt carries the same body")
		require.Equal(t, got[0].event.EventID, d.event.EventID)
		f.verify(t, d)
	}
	require.Eventually(t, func() bool {
		ev := f.srv.Events()
		return len(ev) == 1 && ev[0].Attempts == 3 && ev[0].Delivered == 1
	}, waitFor, time.Millisecond)
}

func TestWebhookRetriesAreBounded(t *testing.T) {
	t.Parallel()
	f := setup(t, payment.Options{WebhookAttempts: 3, WebhookBackoff: time.Second}, 500, 500, 500, 500, 500)
	id := f.createPayment(t, "k", "purchase-1").str("payment_id")
	f.control(t, "/_sandbox/payments/"+id+"/succeed", "")

	for n := 1; n < 3; n++ {
		f.receiver.waitDeliveries(t, n)
		require.Eventually(t, func() bool { return f.clock.Waiters() == 1 }, waitFor, time.Millisecond)
		f.clock.Advance(time.Hour)
	}
	f.receiver.waitDeliveries(t, 3)
	require.Eventually(t, func() bool {
		ev := f.srv.Events()
		return len(ev) == 1 && ev[0].Attempts == 3
	}, waitFor, time.Millisecond)
	ev := f.srv.Events()[0]
	require.Zero(t, ev.Delivered)
	require.Contains(t, ev.LastError, "500")
	require.Zero(t, f.clock.Waiters(), "no further retry is scheduled")
}

func TestDuplicateWebhooksDeliverEveryEventTwice(t *testing.T) {
	t.Parallel()
	f := setup(t, payment.Options{})
	f.control(t, "/_sandbox/faults", `{"mode":"duplicate_webhooks"}`)
	id := f.createPayment(t, "k", "purchase-1").str("payment_id")
	f.control(t, "/_sandbox/payments/"+id+"/succeed", "")

	got := f.receiver.waitDeliveries(t, 2)
	require.Equal(t, got[0].event.EventID, got[1].event.EventID)
	require.Equal(t, got[0].body, got[1].body)
	require.Equal(t, "payment.succeeded", got[1].event.Type)
	f.verify(t, got[0])
	f.verify(t, got[1])
	require.Len(t, f.srv.Events(), 1, "one event, delivered twice")
}

func TestDelayWebhooksHoldsDeliveries(t *testing.T) {
	t.Parallel()
	f := setup(t, payment.Options{})
	f.control(t, "/_sandbox/faults", `{"mode":"delay_webhooks","delay_ms":5000}`)
	id := f.createPayment(t, "k", "purchase-1").str("payment_id")
	f.control(t, "/_sandbox/payments/"+id+"/succeed", "")

	require.Eventually(t, func() bool { return f.clock.Waiters() == 1 }, waitFor, time.Millisecond)
	f.clock.Advance(4999 * time.Millisecond)
	require.Empty(t, f.receiver.got())
	f.clock.Advance(time.Millisecond)
	d := f.receiver.waitDeliveries(t, 1)[0]
	f.verify(t, d)
	require.Equal(t, "payment.succeeded", d.event.Type)
}

func TestRefundIsIdempotentAndAtMostOnce(t *testing.T) {
	t.Parallel()
	f := setup(t, payment.Options{RefundDelay: 2 * time.Second})
	paid := f.paidPayment(t, "purchase-1")

	first := f.refund(t, "refund-purchase-1", paid)
	require.Equal(t, http.StatusCreated, first.status, "%v", first.body)
	refundID := first.str("refund_id")
	require.True(t, strings.HasPrefix(refundID, "re_"), refundID)
	require.Equal(t, "pending", first.str("status"))
	require.Equal(t, paid, first.str("payment_id"))
	require.Equal(t, 4900.0, first.body["amount_cents"])

	again := f.refund(t, "refund-purchase-1", paid)
	require.Equal(t, http.StatusCreated, again.status)
	require.Equal(t, first.body, again.body)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))

	second := f.refund(t, "another-key", paid)
	require.Equal(t, http.StatusConflict, second.status)
	require.Equal(t, "already_refunded", second.errorCode())

	other := f.paidPayment(t, "purchase-2")
	reused := f.refund(t, "refund-purchase-1", other)
	require.Equal(t, http.StatusConflict, reused.status)
	require.Equal(t, "idempotency_key_reused", reused.errorCode())

	got := f.call(t, http.MethodGet, "/v1/refunds/"+refundID, "", "")
	require.Equal(t, http.StatusOK, got.status)
	require.Equal(t, first.body, got.body)
	list := f.call(t, http.MethodGet, "/v1/refunds?payment_id="+paid, "", "")
	require.Len(t, list.body["refunds"], 1)
	require.Empty(t, f.call(t, http.MethodGet, "/v1/refunds?payment_id="+other, "", "").body["refunds"])
	missing := f.call(t, http.MethodGet, "/v1/refunds/re_nope", "", "")
	require.Equal(t, "refund_not_found", missing.errorCode())

	// After the delay the refund succeeds and says so by webhook.
	before := len(f.receiver.got())
	f.clock.Advance(2 * time.Second)
	d := f.receiver.waitDeliveries(t, before+1)[before]
	f.verify(t, d)
	require.Equal(t, payment.Event{
		EventID: d.event.EventID, Type: "refund.succeeded", PaymentID: paid, RefundID: refundID,
		Reference: "purchase-1", AmountCents: 4900,
	}, d.event)
	require.Equal(t, "succeeded", f.call(t, http.MethodGet, "/v1/refunds/"+refundID, "", "").str("status"))

	// Still at most once, and the original key still answers.
	require.Equal(t, "already_refunded", f.refund(t, "third-key", paid).errorCode())
	replay := f.refund(t, "refund-purchase-1", paid)
	require.Equal(t, http.StatusCreated, replay.status)
	require.Equal(t, "succeeded", replay.str("status"))
}

func TestRefundPreconditions(t *testing.T) {
	t.Parallel()
	f := setup(t, payment.Options{})
	pending := f.createPayment(t, "k-pending", "purchase-1").str("payment_id")
	failed := f.createPayment(t, "k-failed", "purchase-2").str("payment_id")
	f.control(t, "/_sandbox/payments/"+failed+"/fail", "")

	tests := []struct {
		name, key, body string
		status          int
		code            string
	}{
		{name: "pending payment", key: "r1", body: `{"payment_id":"` + pending + `"}`, status: 409, code: "payment_not_succeeded"},
		{name: "failed payment", key: "r2", body: `{"payment_id":"` + failed + `"}`, status: 409, code: "payment_not_succeeded"},
		{name: "unknown payment", key: "r3", body: `{"payment_id":"pay_nope"}`, status: 404, code: "payment_not_found"},
		{name: "missing payment id", key: "r4", body: `{}`, status: 400, code: "validation_failed"},
		{name: "missing key", body: `{"payment_id":"` + pending + `"}`, status: 400, code: "idempotency_key_required"},
		{name: "not json", key: "r5", body: `[`, status: 400, code: "invalid_json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := f.call(t, http.MethodPost, "/v1/refunds", tc.key, tc.body)
			require.Equal(t, tc.status, r.status, "%v", r.body)
			require.Equal(t, tc.code, r.errorCode())
		})
	}
	t.Cleanup(func() { require.Empty(t, f.srv.Refunds("")) })
}

func TestFailedRefundMayBeRetriedUnderANewKey(t *testing.T) {
	t.Parallel()
	f := setup(t, payment.Options{})
	paid := f.paidPayment(t, "purchase-1")
	refundID := f.refund(t, "refund-1", paid).str("refund_id")

	failed := f.call(t, http.MethodPost, "/_sandbox/refunds/"+refundID+"/fail", "", "")
	require.Equal(t, http.StatusOK, failed.status)
	require.Equal(t, "failed", failed.str("status"))
	d := f.receiver.waitDeliveries(t, 2)[1]
	f.verify(t, d)
	require.Equal(t, "refund.failed", d.event.Type)
	require.Equal(t, refundID, d.event.RefundID)

	// The timer that would have succeeded it finds it settled and does nothing.
	f.clock.Advance(payment.DefaultRefundDelay)
	require.Equal(t, http.StatusConflict, f.call(t, http.MethodPost, "/_sandbox/refunds/"+refundID+"/succeed", "", "").status)

	retry := f.refund(t, "refund-2", paid)
	require.Equal(t, http.StatusCreated, retry.status, "%v", retry.body)
	require.NotEqual(t, refundID, retry.str("refund_id"))
	require.Len(t, f.srv.Refunds(paid), 2)
	require.Len(t, f.srv.Events(), 2, "payment.succeeded and refund.failed only")
}

// hold_refunds: a refund made under it stays pending past the refund
// delay until the control API settles it; one made after it succeeds by
// itself again.
func TestHoldRefundsKeepsARefundPendingUntilSettled(t *testing.T) {
	t.Parallel()
	f := setup(t, payment.Options{RefundDelay: time.Second})
	paid := f.paidPayment(t, "purchase-1")
	f.control(t, "/_sandbox/faults", `{"mode":"hold_refunds"}`)

	held := f.refund(t, "refund-1", paid).str("refund_id")
	f.clock.Advance(time.Hour)
	require.Equal(t, "pending", f.call(t, http.MethodGet, "/v1/refunds/"+held, "", "").str("status"), "held past the delay")
	require.Equal(t, "failed", f.call(t, http.MethodPost, "/_sandbox/refunds/"+held+"/fail", "", "").str("status"))
	f.receiver.waitDeliveries(t, 2) // payment.succeeded, refund.failed

	f.control(t, "/_sandbox/faults", `{"mode":"none"}`)
	next := f.refund(t, "refund-2", paid).str("refund_id")
	f.clock.Advance(time.Second)
	require.Equal(t, "refund.succeeded", f.receiver.waitDeliveries(t, 3)[2].event.Type)
	require.Equal(t, "succeeded", f.call(t, http.MethodGet, "/v1/refunds/"+next, "", "").str("status"))
}

func TestRefundUnavailableAnswers503AndChangesNothing(t *testing.T) {
	t.Parallel()
	f := setup(t, payment.Options{})
	paid := f.paidPayment(t, "purchase-1")
	f.control(t, "/_sandbox/faults", `{"mode":"refund_unavailable"}`)

	r := f.refund(t, "refund-1", paid)
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	require.Equal(t, "refund_unavailable", r.errorCode())
	require.Equal(t, http.StatusServiceUnavailable, f.call(t, http.MethodGet, "/v1/refunds?payment_id="+paid, "", "").status)
	require.Empty(t, f.srv.Refunds(""))
	// Payments are unaffected.
	require.Equal(t, http.StatusOK, f.call(t, http.MethodGet, "/v1/payments/"+paid, "", "").status)

	f.control(t, "/_sandbox/faults", `{"mode":"none"}`)
	require.Equal(t, http.StatusCreated, f.refund(t, "refund-1", paid).status)
}

func TestNoResponseAppliesTheCallButNeverAnswers(t *testing.T) {
	t.Parallel()
	f := setup(t, payment.Options{MaxHang: 30 * time.Second})
	paid := f.paidPayment(t, "purchase-1")
	f.control(t, "/_sandbox/faults", `{"mode":"no_response"}`)

	// A client that gives up: the call took effect all the same.
	impatient := &http.Client{Timeout: 200 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	_, err := do(impatient, http.MethodPost, f.url+"/v1/refunds", "refund-1", `{"payment_id":"`+paid+`"}`)
	require.Error(t, err)
	require.Len(t, f.srv.Refunds(paid), 1, "the refund exists although the caller got no answer")
	// The refund's delay timer and the abandoned wait of the first call.
	require.Eventually(t, func() bool { return f.clock.Waiters() == 2 }, waitFor, time.Millisecond)

	// A patient client is cut off after MaxHang without an answer.
	patient := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	answered := make(chan error, 1)
	go func() {
		_, err := do(patient, http.MethodPost, f.url+"/v1/payments", "purchase-2", `{"amount_cents":100,"currency":"EUR","reference":"purchase-2"}`)
		answered <- err
	}()
	// Plus the wait of the withheld answer.
	require.Eventually(t, func() bool { return f.clock.Waiters() == 3 }, waitFor, time.Millisecond)
	f.clock.Advance(29 * time.Second)
	require.Empty(t, answered)
	f.clock.Advance(time.Second)
	select {
	case err := <-answered:
		require.Error(t, err, "the connection is closed without an answer")
	case <-time.After(waitFor):
		t.Fatal("no_response outlived MaxHang")
	}

	// Retrying with the same keys once the provider answers finds both effects.
	f.control(t, "/_sandbox/faults", `{"mode":"none"}`)
	refund := f.refund(t, "refund-1", paid)
	require.Equal(t, http.StatusCreated, refund.status)
	require.Equal(t, "true", refund.header.Get("Idempotent-Replayed"))
	pay := f.call(t, http.MethodPost, "/v1/payments", "purchase-2", `{"amount_cents":100,"currency":"EUR","reference":"purchase-2"}`)
	require.Equal(t, http.StatusCreated, pay.status)
	require.Equal(t, "true", pay.header.Get("Idempotent-Replayed"))
}

func TestResendDeliversTheSameEventAgain(t *testing.T) {
	t.Parallel()
	f := setup(t, payment.Options{})
	id := f.createPayment(t, "k", "purchase-1").str("payment_id")
	f.control(t, "/_sandbox/payments/"+id+"/succeed", "")
	first := f.receiver.waitDeliveries(t, 1)[0]

	events := f.call(t, http.MethodGet, "/_sandbox/events", "", "")
	require.Len(t, events.body["events"], 1)

	r := f.call(t, http.MethodPost, "/_sandbox/events/"+first.event.EventID+"/resend", "", "")
	require.Equal(t, http.StatusAccepted, r.status)
	again := f.receiver.waitDeliveries(t, 2)[1]
	require.Equal(t, first.body, again.body)
	f.verify(t, again)

	missing := f.call(t, http.MethodPost, "/_sandbox/events/evt_nope/resend", "", "")
	require.Equal(t, http.StatusNotFound, missing.status)
	require.Equal(t, "event_not_found", missing.errorCode())
}

func TestFaultsValidation(t *testing.T) {
	t.Parallel()
	f := setup(t, payment.Options{})
	for _, body := range []string{`{}`, `{"mode":"explode"}`, `{"mode":"delay_webhooks"}`, `{"mode":"delay_webhooks","delay_ms":-1}`, `nope`} {
		r := f.call(t, http.MethodPost, "/_sandbox/faults", "", body)
		require.Equal(t, http.StatusBadRequest, r.status, body)
	}
	require.Equal(t, "none", f.call(t, http.MethodGet, "/_sandbox/faults", "", "").str("mode"))
}

func TestResetForgetsStateAndStopsPendingWork(t *testing.T) {
	t.Parallel()
	f := setup(t, payment.Options{})
	paid := f.paidPayment(t, "purchase-1")
	require.Equal(t, http.StatusCreated, f.refund(t, "refund-1", paid).status)
	f.control(t, "/_sandbox/faults", `{"mode":"duplicate_webhooks"}`)

	f.control(t, "/_sandbox/reset", "")

	f.clock.Advance(time.Hour) // the old refund timer fires into a cleared state
	require.Equal(t, http.StatusNotFound, f.call(t, http.MethodGet, "/v1/payments/"+paid, "", "").status)
	require.Empty(t, f.srv.Refunds(""))
	require.Empty(t, f.srv.Events())
	require.Equal(t, "none", f.call(t, http.MethodGet, "/_sandbox/faults", "", "").str("mode"))
	require.Len(t, f.receiver.got(), 1, "no webhook from before the reset arrives after it")

	// Keys are forgotten: the same key makes a new payment.
	again := f.createPayment(t, "pay-purchase-1", "purchase-1")
	require.NotEqual(t, paid, again.str("payment_id"))
}

func TestCheckoutPage(t *testing.T) {
	t.Parallel()
	f := setup(t, payment.Options{})
	checkout := f.createPayment(t, "k", "purchase-1").str("checkout_url")
	resp, err := http.Get(checkout)
	require.NoError(t, err)
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/html")
	require.Contains(t, string(page), "/succeed")
	require.Equal(t, http.StatusNotFound, f.call(t, http.MethodGet, "/checkout/pay_nope", "", "").status)
}

func TestWithoutWebhookURLEventsAreRecordedOnly(t *testing.T) {
	t.Parallel()
	srv := payment.New(payment.Options{Clock: clock.NewFake(start)})
	t.Cleanup(func() { require.NoError(t, srv.Shutdown(context.Background())) })
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	r, err := do(http.DefaultClient, http.MethodPost, hs.URL+"/v1/payments", "k", `{"amount_cents":1,"currency":"EUR","reference":"r"}`)
	require.NoError(t, err)
	_, err = srv.SettlePayment(r.str("payment_id"), payment.StatusSucceeded)
	require.NoError(t, err)
	ev := srv.Events()
	require.Len(t, ev, 1)
	require.Zero(t, ev[0].Attempts)
	require.Equal(t, "no webhook URL configured", ev[0].LastError)
}

func TestStartAndShutdown(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(start)
	srv := payment.New(payment.Options{Clock: clk})
	require.NoError(t, srv.Start("127.0.0.1:0"))
	base := srv.URL()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	r, err := do(client, http.MethodPost, base+"/_sandbox/faults", "", `{"mode":"no_response"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.status)

	hung := make(chan error, 1)
	go func() {
		_, err := do(client, http.MethodGet, base+"/v1/payments/pay_x", "", "")
		hung <- err
	}()
	require.Eventually(t, func() bool { return clk.Waiters() == 1 }, waitFor, time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, srv.Shutdown(ctx), "shutdown must release withheld answers")
	require.Error(t, <-hung)
	_, err = do(client, http.MethodGet, base+"/v1/payments/pay_x", "", "")
	require.Error(t, err, "the listener must be closed")
}
