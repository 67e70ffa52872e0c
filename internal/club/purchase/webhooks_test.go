package purchase_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/club/purchase/purchasetest"
	"github.com/clubdev/club/internal/payment"
	"github.com/clubdev/club/internal/webhooksig"
)

var secret = []byte("whsec-test")

// callbacks records task callbacks; a token is single-use, like Step
// Functions'.
type callbacks struct {
	mu      sync.Mutex
	used    map[string]bool
	success []string // tokens
	failure []string // "token:error"
}

func (c *callbacks) settle(token string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.used == nil {
		c.used = map[string]bool{}
	}
	if c.used[token] {
		return purchase.ErrTaskClosed
	}
	c.used[token] = true
	return nil
}

func (c *callbacks) SendTaskSuccess(_ context.Context, token, output string) error {
	if err := c.settle(token); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.success = append(c.success, token)
	return nil
}

func (c *callbacks) SendTaskFailure(_ context.Context, token, errorName, _ string) error {
	if err := c.settle(token); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failure = append(c.failure, token+":"+errorName)
	return nil
}

type webhookFixture struct {
	*purchasetest.Fixture
	mem *purchasetest.Memory
	cb  *callbacks
	wh  *purchase.Webhooks
}

func setupWebhooks(t *testing.T) *webhookFixture {
	t.Helper()
	mem := purchasetest.NewMemory()
	f := purchasetest.Setup(t, func(*testing.T) purchasetest.Ports {
		return purchasetest.Ports{Intensives: mem.Intensives(), Purchases: mem, Idempotency: mem.Idempotency(), Outbox: mem}
	})
	w := &webhookFixture{Fixture: f, mem: mem, cb: &callbacks{}}
	wh, err := purchase.NewWebhooks(purchase.WebhooksDeps{
		Secret: secret, Store: mem, Callbacks: w.cb, Now: f.Now,
	})
	require.NoError(t, err)
	w.wh = wh
	return w
}

// waiting returns a purchase waiting for its webhook with token "tok-1".
func (w *webhookFixture) waiting() purchase.Purchase {
	w.T.Helper()
	in := w.Intensive(2)
	p := w.Buy(in.ID(), "student-1")
	w.Update(p.ID(), func(p *purchase.Purchase) error {
		return p.RecordPayment("pay_1", "http://checkout/pay_1", purchase.ProviderPending, w.Now())
	})
	return w.Update(p.ID(), func(p *purchase.Purchase) error { return p.AttachTaskToken("tok-1") })
}

func (w *webhookFixture) deliver(ev purchase.WebhookEvent) (purchase.WebhookResult, error) {
	body, err := json.Marshal(ev)
	require.NoError(w.T, err)
	return w.wh.Handle(w.Ctx, webhooksig.Sign(secret, w.Now(), body), body)
}

func paid(p purchase.Purchase) purchase.WebhookEvent {
	return purchase.WebhookEvent{EventID: "evt_1", Type: purchase.EventPaymentSucceeded, PaymentID: "pay_1", Reference: p.ID(), AmountCents: 49900}
}

// Wrong signature, stale or future timestamp, no header: 401 and nothing
// read or changed.
func TestWebhookAuthentication(t *testing.T) {
	t.Parallel()
	w := setupWebhooks(t)
	p := w.waiting()
	body, err := json.Marshal(paid(p))
	require.NoError(t, err)
	for name, header := range map[string]string{
		"wrong secret": webhooksig.Sign([]byte("other"), w.Now(), body),
		"stale":        webhooksig.Sign(secret, w.Now().Add(-6*time.Minute), body),
		"future":       webhooksig.Sign(secret, w.Now().Add(6*time.Minute), body),
		"missing":      "",
		"garbage":      "t=x,v1=y",
		"other body":   webhooksig.Sign(secret, w.Now(), []byte(`{"event_id":"evt_2"}`)),
	} {
		_, err := w.wh.Handle(w.Ctx, header, body)
		require.ErrorIs(t, err, purchase.ErrWebhookUnauthenticated, name)
	}
	// Within the 5-minute tolerance it is accepted.
	_, err = w.wh.Handle(w.Ctx, webhooksig.Sign(secret, w.Now().Add(-4*time.Minute), body), body)
	require.NoError(t, err)
	require.Len(t, w.cb.success, 1, "only the authentic delivery acted")
}

func TestWebhookRejectsWhatIsNotOurs(t *testing.T) {
	t.Parallel()
	w := setupWebhooks(t)
	p := w.waiting()
	before := w.Purchase(p.ID())

	_, err := w.deliver(purchase.WebhookEvent{EventID: "evt_1", Type: purchase.EventPaymentSucceeded, PaymentID: "pay_1", Reference: "p-unknown"})
	require.ErrorIs(t, err, purchase.ErrUnknownPayment)
	require.ErrorIs(t, err, club.ErrNotFound)
	_, err = w.deliver(purchase.WebhookEvent{EventID: "evt_1", Type: purchase.EventPaymentSucceeded, PaymentID: "pay_other", Reference: p.ID()})
	require.ErrorIs(t, err, purchase.ErrUnknownPayment, "another payment than the purchase's")
	_, err = w.deliver(purchase.WebhookEvent{EventID: "evt_1", Type: purchase.EventPaymentSucceeded, PaymentID: "pay_1"})
	require.ErrorIs(t, err, purchase.ErrUnknownPayment, "no reference")
	_, err = w.deliver(purchase.WebhookEvent{EventID: "evt_2", Type: purchase.EventRefundSucceeded, PaymentID: "pay_1", RefundID: "re_1", Reference: p.ID()})
	require.ErrorIs(t, err, purchase.ErrUnknownPayment, "no refund was requested")

	for _, body := range []string{`not json`, `{"type":"payment.succeeded"}`, `{"event_id":"e","type":"payment.succeeded"}`} {
		_, err := w.wh.Handle(w.Ctx, webhooksig.Sign(secret, w.Now(), []byte(body)), []byte(body))
		require.ErrorIs(t, err, purchase.ErrWebhookMalformed, body)
	}
	_, err = w.deliver(purchase.WebhookEvent{EventID: "evt_2", Type: purchase.EventRefundSucceeded, PaymentID: "pay_1", Reference: p.ID()})
	require.ErrorIs(t, err, purchase.ErrWebhookMalformed, "a refund event without refund_id")

	res, err := w.deliver(purchase.WebhookEvent{EventID: "evt_3", Type: "payment.disputed", PaymentID: "pay_1", Reference: p.ID()})
	require.NoError(t, err)
	require.Equal(t, purchase.OutcomeIgnored, res.Outcome)

	require.True(t, before.Equal(w.Purchase(p.ID())), "no state change")
	require.Empty(t, w.cb.success)
}

// payment.succeeded completes the saga's wait with the stored token; a
// duplicate changes nothing.
func TestWebhookCompletesTheWait(t *testing.T) {
	t.Parallel()
	w := setupWebhooks(t)
	p := w.waiting()
	res, err := w.deliver(paid(p))
	require.NoError(t, err)
	require.Equal(t, purchase.OutcomeCallbackSent, res.Outcome)
	require.Equal(t, []string{"tok-1"}, w.cb.success)
	stored := w.Purchase(p.ID())
	require.Equal(t, purchase.ProviderSucceeded, stored.PaymentStatus())

	res, err = w.deliver(paid(p))
	require.NoError(t, err, "a duplicate answers 200")
	require.Equal(t, purchase.OutcomeUnchanged, res.Outcome)
	require.True(t, stored.Equal(w.Purchase(p.ID())))
	require.Equal(t, []string{"tok-1"}, w.cb.success)
}

func TestWebhookFailsTheWait(t *testing.T) {
	t.Parallel()
	w := setupWebhooks(t)
	p := w.waiting()
	ev := paid(p)
	ev.Type = purchase.EventPaymentFailed
	res, err := w.deliver(ev)
	require.NoError(t, err)
	require.Equal(t, purchase.OutcomeCallbackSent, res.Outcome)
	require.Equal(t, []string{"tok-1:" + purchase.TaskErrorPaymentFailed}, w.cb.failure)
	require.Equal(t, purchase.ProviderFailed, w.Purchase(p.ID()).PaymentStatus())
}

// The webhook can come before the wait step stored its token: it records
// what it saw, and the wait step completes its own task.
func TestWebhookBeforeTheToken(t *testing.T) {
	t.Parallel()
	w := setupWebhooks(t)
	in := w.Intensive(1)
	p := w.Buy(in.ID(), "student-1")
	w.Update(p.ID(), func(p *purchase.Purchase) error {
		return p.RecordPayment("pay_1", "u", purchase.ProviderPending, w.Now())
	})
	res, err := w.deliver(paid(p))
	require.NoError(t, err)
	require.Equal(t, purchase.OutcomeRecorded, res.Outcome)
	require.Empty(t, w.cb.success)

	steps, err := purchase.NewSteps(purchase.StepsDeps{Store: w.mem, Payments: &fakeProvider{}, Callbacks: w.cb, Now: w.Now})
	require.NoError(t, err)
	require.NoError(t, steps.AwaitPayment(w.Ctx, p.ID(), "tok-9"))
	require.Equal(t, []string{"tok-9"}, w.cb.success, "the second to arrive sends the callback")
}

// A late payment records the refund intent with the observation and a
// refund.requested outbox row, in one write; the seat counters do not move;
// repeats change nothing and write no second row.
func TestWebhookLatePayment(t *testing.T) {
	t.Parallel()
	w := setupWebhooks(t)
	p := w.waiting()
	w.Update(p.ID(), func(p *purchase.Purchase) error { return p.Expire("no payment", w.Now()) })
	seats := [3]int{}
	seats[0], seats[1], seats[2] = w.Seats(p.IntensiveID())

	res, err := w.deliver(paid(p))
	require.NoError(t, err)
	require.Equal(t, purchase.OutcomeLatePayment, res.Outcome)
	require.Equal(t, purchase.StatusRefundPending, w.Purchase(p.ID()).Status())
	for range 2 {
		res, err = w.deliver(paid(p))
		require.NoError(t, err)
		require.Equal(t, purchase.OutcomeUnchanged, res.Outcome, "the intent was already recorded")
	}
	rows, err := w.mem.Unpublished(context.Background(), w.Now().Add(time.Hour), 100)
	require.NoError(t, err)
	var refunds []events.RefundRequested
	for _, r := range rows {
		if r.Type == events.TypeRefundRequested && r.AggregateID == p.ID() {
			env, err := events.Decode(r.Payload)
			require.NoError(t, err)
			rr, err := env.RefundRequested()
			require.NoError(t, err)
			refunds = append(refunds, rr)
		}
	}
	require.Len(t, refunds, 1, "one refund.requested row: the relay starts the refund execution from it")
	require.Equal(t, "pay_1", refunds[0].PaymentID)
	require.Contains(t, refunds[0].Reason, "late payment")

	got := w.Purchase(p.ID())
	require.True(t, got.LatePayment())
	require.Len(t, got.History(), 4, "reserved, payment_pending, expired, refund_pending")
	after := [3]int{}
	after[0], after[1], after[2] = w.Seats(p.IntensiveID())
	require.Equal(t, seats, after)

	// refund.succeeded completes it; a duplicate changes nothing.
	refund := purchase.WebhookEvent{EventID: "evt_9", Type: purchase.EventRefundSucceeded, PaymentID: "pay_1", RefundID: "re_1", Reference: p.ID()}
	res, err = w.deliver(refund)
	require.NoError(t, err)
	require.Equal(t, purchase.OutcomeRefunded, res.Outcome)
	res, err = w.deliver(refund)
	require.NoError(t, err)
	require.Equal(t, purchase.OutcomeUnchanged, res.Outcome)
	require.Equal(t, purchase.StatusRefunded, w.Purchase(p.ID()).Status())
	refund.RefundID = "re_2"
	_, err = w.deliver(refund)
	require.ErrorIs(t, err, purchase.ErrUnknownPayment, "one key, one refund")
}

func TestExecutionNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, "p-1-refund", purchase.RefundExecutionName("p-1"))
	require.Equal(t, "p-1", purchase.ExecutionName("p-1"))
}

// fakeProvider answers from its fields.
type fakeProvider struct {
	payErr    error
	pay       payment.Payment
	refundErr error
	refund    payment.Refund
	calls     int
	// refundKeys are the idempotency keys of the refund requests, in order.
	refundKeys []string
	// payDeadline is the deadline of the last payment request's context.
	payDeadline time.Time
}

func (f *fakeProvider) CreatePayment(ctx context.Context, _ string, _ payment.CreatePaymentRequest) (payment.Payment, error) {
	f.calls++
	f.payDeadline, _ = ctx.Deadline()
	return f.pay, f.payErr
}

func (f *fakeProvider) GetPayment(context.Context, string) (payment.Payment, error) {
	f.calls++
	return f.pay, f.payErr
}

func (f *fakeProvider) CreateRefund(_ context.Context, key, _ string) (payment.Refund, error) {
	f.calls++
	f.refundKeys = append(f.refundKeys, key)
	return f.refund, f.refundErr
}

func (f *fakeProvider) GetRefund(context.Context, string) (payment.Refund, error) {
	f.calls++
	return f.refund, f.refundErr
}
