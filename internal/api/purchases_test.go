package api_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/api"
	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/webhooksig"
)

func TestCreateIntensive(t *testing.T) {
	t.Parallel()
	t.Run("created with every field", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		r := f.do("POST", "/intensives", teacher, `{"title":" Go in production ","capacity":12,"price":{"amount_cents":4900,"currency":"EUR"},"hold_seconds":300}`)
		require.Equal(t, 201, r.status, r.body)
		id := r.str("intensive_id")
		require.True(t, strings.HasPrefix(id, "i-"), id)
		require.JSONEq(t, `{"intensive_id":"`+id+`","title":"Go in production","capacity":12,"seats_taken":0,"seats_held":0,"seats_left":12,
			"price":{"amount_cents":4900,"currency":"EUR"},"hold_seconds":300,"teacher_id":"t-1"}`, r.body)

		got := f.do("GET", "/intensives/"+id, otherStudent, "")
		require.Equal(t, 200, got.status, got.body)
		require.JSONEq(t, r.body, got.body, "the same shape for anyone signed in")
	})
	t.Run("hold_seconds defaults to 900", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		r := f.do("POST", "/intensives", teacher, `{"title":"Go","capacity":1,"price":{"amount_cents":1,"currency":"USD"}}`)
		require.Equal(t, 201, r.status, r.body)
		require.EqualValues(t, 900, r.doc["hold_seconds"])
	})

	valid := func(member, value string) string {
		fields := map[string]string{
			"title": `"Go"`, "capacity": `3`, "price": `{"amount_cents":4900,"currency":"EUR"}`, "hold_seconds": `60`,
		}
		var parts []string
		for _, k := range []string{"title", "capacity", "price", "hold_seconds"} {
			v := fields[k]
			if k == member {
				if value == "" {
					continue
				}
				v = value
			}
			parts = append(parts, `"`+k+`":`+v)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	tests := []errorCase{
		{name: "no title", body: valid("title", ""), wantStatus: 400, wantCode: "validation_failed", wantField: "title"},
		{name: "title with a control character", body: valid("title", `"Go\u001b[31m"`), wantStatus: 400, wantCode: "validation_failed", wantField: "title"},
		{name: "capacity 0", body: valid("capacity", `0`), wantStatus: 400, wantCode: "validation_failed", wantField: "capacity"},
		{name: "capacity 10001", body: valid("capacity", `10001`), wantStatus: 400, wantCode: "validation_failed", wantField: "capacity"},
		{name: "capacity a string", body: valid("capacity", `"3"`), wantStatus: 400, wantCode: "validation_failed", wantField: "capacity"},
		{name: "no price", body: valid("price", ""), wantStatus: 400, wantCode: "validation_failed", wantField: "price.amount_cents"},
		{name: "null price", body: valid("price", `null`), wantStatus: 400, wantCode: "validation_failed", wantField: "price.amount_cents"},
		{name: "price not an object", body: valid("price", `4900`), wantStatus: 400, wantCode: "validation_failed", wantField: "price"},
		{name: "price a list", body: valid("price", `[4900]`), wantStatus: 400, wantCode: "validation_failed", wantField: "price"},
		{name: "amount 0", body: valid("price", `{"amount_cents":0,"currency":"EUR"}`), wantStatus: 400, wantCode: "validation_failed", wantField: "price.amount_cents"},
		{name: "amount fractional", body: valid("price", `{"amount_cents":49.5,"currency":"EUR"}`), wantStatus: 400, wantCode: "validation_failed", wantField: "price.amount_cents"},
		{name: "amount too large", body: valid("price", `{"amount_cents":100000001,"currency":"EUR"}`), wantStatus: 400, wantCode: "validation_failed", wantField: "price.amount_cents"},
		{name: "currency lower case", body: valid("price", `{"amount_cents":4900,"currency":"eur"}`), wantStatus: 400, wantCode: "validation_failed", wantField: "price.currency"},
		{name: "no currency", body: valid("price", `{"amount_cents":4900}`), wantStatus: 400, wantCode: "validation_failed", wantField: "price.currency"},
		{name: "unknown price field", body: valid("price", `{"amount_cents":4900,"currency":"EUR","tax":1}`), wantStatus: 400, wantCode: "validation_failed", wantField: "price.tax"},
		{name: "hold 4 seconds", body: valid("hold_seconds", `4`), wantStatus: 400, wantCode: "validation_failed", wantField: "hold_seconds"},
		{name: "hold 3601 seconds", body: valid("hold_seconds", `3601`), wantStatus: 400, wantCode: "validation_failed", wantField: "hold_seconds"},
		{name: "identity is never from the body", body: `{"title":"Go","capacity":3,"price":{"amount_cents":1,"currency":"EUR"},"teacher_id":"t-2"}`, wantStatus: 400, wantCode: "validation_failed", wantField: "teacher_id"},
		{name: "invalid JSON", body: `{"title":"Go",`, wantStatus: 400, wantCode: "invalid_json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			tt.check(t, f.do("POST", "/intensives", teacher, tt.body))
		})
	}
}

func TestGetIntensiveNotFound(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, path := range []string{"/intensives/i-nope", "/intensives/a%20b", "/intensives/" + strings.Repeat("i", 129)} {
		r := f.do("GET", path, student, "")
		require.Equal(t, 404, r.status, path)
		require.Equal(t, "intensive_not_found", r.errorCode(), path)
	}
	r := f.buy(student, "i-nope", "key-00000001")
	require.Equal(t, 404, r.status)
	require.Equal(t, "intensive_not_found", r.errorCode())
}

func TestPurchase(t *testing.T) {
	t.Parallel()

	t.Run("accepted with Location, replayed, key reuse refused", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		id := f.createIntensive(teacher, 3, 60)
		before := time.Now().Truncate(time.Second) // RFC 3339 in the answer may drop sub-seconds
		first := f.buy(student, id, "key-00000001")
		after := time.Now()
		require.Equal(t, 202, first.status, first.body)
		pid := first.str("purchase_id")
		require.True(t, strings.HasPrefix(pid, "p-"), pid)
		require.Equal(t, "reserved", first.str("status"))
		require.Equal(t, "/purchases/"+pid, first.headers["Location"])
		require.Empty(t, first.headers["Idempotent-Replayed"])
		deadline, err := time.Parse(time.RFC3339Nano, first.str("hold_expires_at"))
		require.NoError(t, err)
		// The intensive's hold: sixty seconds from the moment of the purchase,
		// whenever between before and after that was.
		require.False(t, deadline.Before(before.Add(60*time.Second)), "the intensive's hold: %s", deadline)
		require.False(t, deadline.After(after.Add(60*time.Second)), "the intensive's hold: %s", deadline)

		for _, body := range []string{"", "{}"} {
			again := f.do("POST", "/intensives/"+id+"/purchases", student, body, "Idempotency-Key", "key-00000001")
			require.Equal(t, 202, again.status)
			require.Equal(t, first.body, again.body, "the original body, byte for byte")
			require.Equal(t, "/purchases/"+pid, again.headers["Location"], "rebuilt on replay")
			require.Equal(t, "true", again.headers["Idempotent-Replayed"])
		}
		in := f.do("GET", "/intensives/"+id, student, "")
		require.EqualValues(t, 1, in.doc["seats_held"], "one hold")
		require.EqualValues(t, 2, in.doc["seats_left"])
		rows, err := f.purchases.Unpublished(f.ctx, time.Now().Add(time.Hour), 100)
		require.NoError(t, err)
		require.Len(t, rows, 1, "one purchase.requested, the saga's start")
		require.Equal(t, events.TypePurchaseRequested, rows[0].Type)
		require.Equal(t, pid, rows[0].AggregateID)

		other := f.createIntensive(teacher, 3, 60)
		r := f.buy(student, other, "key-00000001")
		require.Equal(t, 422, r.status)
		require.Equal(t, "idempotency_key_reused", r.errorCode())
	})

	t.Run("no free seat is intensive_full", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		id := f.createIntensive(teacher, 1, 60)
		require.Equal(t, 202, f.buy(student, id, "key-00000001").status)
		r := f.buy(otherStudent, id, "key-00000002")
		require.Equal(t, 409, r.status, r.body)
		require.Equal(t, "intensive_full", r.errorCode(), "a held seat is not free")
	})

	tests := []errorCase{
		{name: "no key", wantStatus: 400, wantCode: "idempotency_key_required"},
		{name: "short key", headers: []string{"Idempotency-Key", "short"}, wantStatus: 400, wantCode: "idempotency_key_required"},
		{name: "body with a field", body: `{"intensive_id":"i-2"}`, headers: []string{"Idempotency-Key", "key-00000001"}, wantStatus: 400, wantCode: "validation_failed", wantField: "intensive_id"},
		{name: "invalid JSON", body: `{`, headers: []string{"Idempotency-Key", "key-00000001"}, wantStatus: 400, wantCode: "invalid_json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			id := f.createIntensive(teacher, 3, 60)
			tt.check(t, f.do("POST", "/intensives/"+id+"/purchases", student, tt.body, tt.headers...))
			in := f.do("GET", "/intensives/"+id, student, "")
			require.EqualValues(t, 0, in.doc["seats_held"], "nothing held")
		})
	}
}

// reservedPurchase creates an intensive and a purchase of student's.
func (f *fixture) reservedPurchase() (intensiveID, purchaseID string) {
	f.t.Helper()
	intensiveID = f.createIntensive(teacher, 3, 60)
	r := f.buy(student, intensiveID, "key-00000001")
	require.Equal(f.t, 202, r.status, r.body)
	return intensiveID, r.str("purchase_id")
}

// advance moves a purchase as the saga's steps would.
func (f *fixture) advance(id string, change func(p *purchase.Purchase) error) {
	f.t.Helper()
	_, err := f.purchases.Update(f.ctx, id, change)
	require.NoError(f.t, err)
}

// waitingForPayment: the provider made payment pay-1 and the saga waits for
// its webhook with token.
func waitingForPayment(token string) func(p *purchase.Purchase) error {
	return func(p *purchase.Purchase) error {
		if err := p.RecordPayment("pay-1", "https://pay.example/checkout/pay-1", purchase.ProviderPending, time.Now()); err != nil {
			return err
		}
		return p.AttachTaskToken(token)
	}
}

func TestGetPurchase(t *testing.T) {
	t.Parallel()
	f := setup(t)
	intensiveID, pid := f.reservedPurchase()

	r := f.do("GET", "/purchases/"+pid, student, "")
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, pid, r.str("purchase_id"))
	require.Equal(t, intensiveID, r.str("intensive_id"))
	require.Equal(t, "reserved", r.str("status"))
	require.NotContains(t, r.doc, "payment", "no payment requested yet")
	require.NotContains(t, r.doc, "refund")
	history := r.doc["history"].([]any)
	require.Len(t, history, 1)
	require.Equal(t, "reserved", history[0].(map[string]any)["status"])

	f.advance(pid, waitingForPayment("token-secret-1"))
	r = f.do("GET", "/purchases/"+pid, student, "")
	require.Equal(t, "payment_pending", r.str("status"))
	require.Equal(t, map[string]any{"payment_id": "pay-1", "status": "pending", "checkout_url": "https://pay.example/checkout/pay-1"}, r.doc["payment"])
	require.Len(t, r.doc["history"], 2)
	require.NotContains(t, r.body, "token-secret-1", "the task token completes the saga's wait: never shown")

	for _, who := range []caller{otherStudent, teacher, operator} {
		r := f.do("GET", "/purchases/"+pid, who, "")
		require.Equal(t, 404, r.status, who.sub)
		require.Equal(t, "not_found", r.errorCode(), "another's purchase looks missing")
	}
	r = f.do("GET", "/purchases/p-nope", student, "")
	require.Equal(t, 404, r.status)
	require.Equal(t, "not_found", r.errorCode())
}

func TestPaymentWebhookCompletesTheWait(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, pid := f.reservedPurchase()
	f.advance(pid, waitingForPayment("token-1"))
	ev := map[string]any{"event_id": "evt-1", "type": "payment.succeeded", "payment_id": "pay-1", "reference": pid, "amount_cents": 4900}

	r := f.webhook(ev)
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, "callback_sent", r.str("outcome"))
	require.Equal(t, "success", f.callbacks.outcome("token-1"), "the saga's wait is completed")

	// A duplicate (the provider retrying, or duplicate_webhooks) answers
	// 200 and changes nothing.
	p, err := f.purchases.Get(f.ctx, pid)
	require.NoError(t, err)
	r = f.webhook(ev)
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, "unchanged", r.str("outcome"))
	again, err := f.purchases.Get(f.ctx, pid)
	require.NoError(t, err)
	require.True(t, p.Equal(again), "nothing changed")
}

func TestPaymentWebhookFailedPayment(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, pid := f.reservedPurchase()
	f.advance(pid, waitingForPayment("token-1"))
	r := f.webhook(map[string]any{"event_id": "evt-1", "type": "payment.failed", "payment_id": "pay-1", "reference": pid})
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, purchase.TaskErrorPaymentFailed, f.callbacks.outcome("token-1"))
}

// TestLatePaymentWebhook: a payment for an expired purchase records the
// refund intent with a refund.requested outbox row (the relay starts the
// refund from it); repeats are answered 200 and write nothing more.
func TestLatePaymentWebhook(t *testing.T) {
	t.Parallel()
	f := setup(t)
	intensiveID, pid := f.reservedPurchase()
	f.advance(pid, func(p *purchase.Purchase) error {
		if err := waitingForPayment("token-1")(p); err != nil {
			return err
		}
		return p.Expire("no payment before the deadline", time.Now())
	})
	ev := map[string]any{"event_id": "evt-1", "type": "payment.succeeded", "payment_id": "pay-1", "reference": pid, "amount_cents": 4900}

	r := f.webhook(ev)
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, "late_payment_refund", r.str("outcome"))
	got := f.do("GET", "/purchases/"+pid, student, "")
	require.Equal(t, "refund_pending", got.str("status"), "the intent is recorded with the observation")
	for range 2 {
		r = f.webhook(ev)
		require.Equal(t, 200, r.status, r.body)
	}
	rows, err := f.purchases.Unpublished(context.Background(), time.Now().Add(time.Hour), 100)
	require.NoError(t, err)
	refundRows := 0
	for _, row := range rows {
		if row.Type == events.TypeRefundRequested && row.AggregateID == pid {
			refundRows++
		}
	}
	require.Equal(t, 1, refundRows, "one refund.requested row, whatever the repeats")
	in := f.do("GET", "/intensives/"+intensiveID, student, "")
	require.EqualValues(t, 0, in.doc["seats_taken"], "a late payment never adds a seat")
	require.EqualValues(t, 0, in.doc["seats_held"])

	// The provider confirms the refund.
	f.advance(pid, func(p *purchase.Purchase) error { return p.RecordRefund("rf-1", purchase.ProviderPending) })
	r = f.webhook(map[string]any{"event_id": "evt-2", "type": "refund.succeeded", "payment_id": "pay-1", "refund_id": "rf-1", "reference": pid})
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, "refunded", r.str("outcome"))
	got = f.do("GET", "/purchases/"+pid, student, "")
	require.Equal(t, "refunded", got.str("status"))
	require.Equal(t, map[string]any{"refund_id": "rf-1", "status": "succeeded"}, got.doc["refund"])
	attempts, _ := got.doc["refunds"].([]any)
	require.Len(t, attempts, 1, "every refund attempt, with its outcome")
	attempt := attempts[0].(map[string]any)
	require.Equal(t, []any{1.0, "rf-1", "succeeded"}, []any{attempt["attempt"], attempt["refund_id"], attempt["status"]})
	require.NotEmpty(t, attempt["requested_at"])
	var statuses []string
	for _, h := range got.doc["history"].([]any) {
		statuses = append(statuses, h.(map[string]any)["status"].(string))
	}
	require.Equal(t, []string{"reserved", "payment_pending", "expired", "refund_pending", "refunded"}, statuses)
}

// TestPaymentWebhookRefusesWhatIsNotOurs: nothing but an authentic event
// about one of our payments is applied, and the answer says whether
// retrying can help.
func TestPaymentWebhookRefusesWhatIsNotOurs(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, pid := f.reservedPurchase()
	f.advance(pid, waitingForPayment("token-1"))
	body := fmt.Sprintf(`{"event_id":"evt-1","type":"payment.succeeded","payment_id":"pay-1","reference":%q}`, pid)
	signed := func(b string, at time.Time) string { return webhooksig.Sign(webhookSecret, at, []byte(b)) }

	tests := []struct {
		name, body string
		headers    []string
		wantStatus int
		wantCode   string
	}{
		{"no signature", body, nil, 401, "invalid_signature"},
		{"signed with another secret", body, []string{webhooksig.Header, webhooksig.Sign([]byte("guess"), time.Now(), []byte(body))}, 401, "invalid_signature"},
		{"signature of another body", body, []string{webhooksig.Header, signed(strings.Replace(body, "pay-1", "pay-2", 1), time.Now())}, 401, "invalid_signature"},
		{"signature too old", body, []string{webhooksig.Header, signed(body, time.Now().Add(-6*time.Minute))}, 401, "invalid_signature"},
		{"garbage signature", body, []string{webhooksig.Header, "v1=zz"}, 401, "invalid_signature"},
		{"signed, not JSON", "{", []string{webhooksig.Header, signed("{", time.Now())}, 400, "invalid_webhook"},
		{"signed, no payment_id", `{"event_id":"e","type":"payment.succeeded"}`, []string{webhooksig.Header, signed(`{"event_id":"e","type":"payment.succeeded"}`, time.Now())}, 400, "invalid_webhook"},
		{"signed, unknown purchase", `{"event_id":"e","type":"payment.succeeded","payment_id":"pay-1","reference":"p-nope"}`,
			[]string{webhooksig.Header, signed(`{"event_id":"e","type":"payment.succeeded","payment_id":"pay-1","reference":"p-nope"}`, time.Now())}, 404, "payment_not_found"},
	}
	for _, tt := range tests {
		r := f.do("POST", "/webhooks/payments", anonymous, tt.body, tt.headers...)
		require.Equal(t, tt.wantStatus, r.status, "%s: %s", tt.name, r.body)
		require.Equal(t, tt.wantCode, r.errorCode(), tt.name)
	}
	p, err := f.purchases.Get(f.ctx, pid)
	require.NoError(t, err)
	require.Equal(t, purchase.ProviderPending, p.PaymentStatus(), "nothing was recorded")
	require.Empty(t, f.callbacks.outcome("token-1"), "the wait is untouched")

	// A signed event with another payment id for our purchase is not ours.
	r := f.webhook(map[string]any{"event_id": "e", "type": "payment.succeeded", "payment_id": "pay-other", "reference": pid})
	require.Equal(t, 404, r.status)
	require.Equal(t, "payment_not_found", r.errorCode())
}

// TestPaymentWebhookVerifiesTheExactBytes: the signature covers the body as
// sent, white space included, and a base64-encoded body (API Gateway encodes
// bodies it does not take for text) is decoded before verification.
func TestPaymentWebhookVerifiesTheExactBytes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, pid := f.reservedPurchase()
	f.advance(pid, waitingForPayment("token-1"))
	body := fmt.Sprintf("{ \"event_id\" : \"evt-1\",\n  \"type\":\"payment.succeeded\", \"payment_id\":\"pay-1\", \"reference\":%q }\n", pid)
	sig := webhooksig.Sign(webhookSecret, time.Now(), []byte(body))

	ev := event("POST", "/webhooks/payments", anonymous, base64.StdEncoding.EncodeToString([]byte(body)),
		map[string]string{"Content-Type": "application/octet-stream", webhooksig.Header: sig})
	ev.IsBase64Encoded = true
	r := f.handle(ev)
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, "callback_sent", r.str("outcome"))

	// The same bytes as text, with the header in another case.
	r = f.do("POST", "/webhooks/payments", anonymous, body, "x-sandbox-signature", sig)
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, "unchanged", r.str("outcome"))
}

// TestPaymentWebhookInfrastructureFailureIs5xx: a store that fails makes the
// webhook answer 5xx, so that the provider delivers the event again.
func TestPaymentWebhookInfrastructureFailureIs5xx(t *testing.T) {
	t.Parallel()
	f := setup(t)
	webhooks, err := purchase.NewWebhooks(purchase.WebhooksDeps{
		Secret: webhookSecret, Store: failingPurchaseStore{Store: f.purchases, err: context.DeadlineExceeded},
		Callbacks: f.callbacks,
	})
	require.NoError(t, err)
	f = setup(t, func(d *api.Deps) { d.Webhooks = webhooks })
	r := f.webhook(map[string]any{"event_id": "evt-1", "type": "payment.succeeded", "payment_id": "pay-1", "reference": "p-1"})
	require.Equal(t, 500, r.status, r.body)
	require.Equal(t, "internal", r.errorCode())
	require.Contains(t, f.logs.String(), `"level":"ERROR"`)
	require.Contains(t, f.logs.String(), `"event_id":"evt-1"`)
}

// failingPurchaseStore fails every update, as DynamoDB does when it is out
// of reach.
type failingPurchaseStore struct {
	purchase.Store
	err error
}

func (s failingPurchaseStore) Update(context.Context, string, func(*purchase.Purchase) error) (purchase.Purchase, error) {
	return purchase.Purchase{}, s.err
}
