package payment_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/internal/payment"
	sandbox "github.com/clubdev/club/internal/sandbox/payment"
)

type env struct {
	sb     *sandbox.Server
	client *payment.Client
	// impatient gives up after 200 ms, so that the no_response fault is
	// quick to observe; client waits as long as a test waits
	// (internal/patience), so that a loaded machine's slow answer is not
	// taken for no answer.
	impatient *payment.Client
	url       string
}

// setup runs the payment sandbox behind httptest, with a patient client and
// an impatient one.
func setup(t *testing.T) *env {
	t.Helper()
	sb := sandbox.New(sandbox.Options{})
	srv := httptest.NewServer(sb)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience.Wait())
		defer cancel()
		_ = sb.Shutdown(ctx) // releases withheld answers first
		srv.Close()
	})
	c, err := payment.New(payment.Config{BaseURL: srv.URL, Timeout: patience.Wait()})
	require.NoError(t, err)
	impatient, err := payment.New(payment.Config{BaseURL: srv.URL, Timeout: 200 * time.Millisecond})
	require.NoError(t, err)
	return &env{sb: sb, client: c, impatient: impatient, url: srv.URL}
}

var order = payment.CreatePaymentRequest{AmountCents: 49900, Currency: "EUR", Reference: "p-1"}

func TestPaymentLifecycle(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()

	p, err := e.client.CreatePayment(ctx, "pay-p-1", order)
	require.NoError(t, err)
	require.Equal(t, payment.StatusPending, p.Status)
	require.Equal(t, "p-1", p.Reference)
	require.Equal(t, int64(49900), p.AmountCents)
	require.NotEmpty(t, p.CheckoutURL)

	again, err := e.client.CreatePayment(ctx, "pay-p-1", order)
	require.NoError(t, err)
	require.Equal(t, p.ID, again.ID, "the same key is the same payment")

	got, err := e.client.GetPayment(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, payment.StatusPending, got.Status)

	_, err = e.client.CreateRefund(ctx, "refund-p-1", p.ID)
	require.ErrorIs(t, err, payment.ErrRejected, "only a succeeded payment can be refunded")
	requireCode(t, err, 409, "payment_not_succeeded")

	_, err = e.sb.SettlePayment(p.ID, sandbox.StatusSucceeded)
	require.NoError(t, err)
	got, err = e.client.GetPayment(ctx, p.ID)
	require.NoError(t, err)
	require.Equal(t, payment.StatusSucceeded, got.Status)

	rf, err := e.client.CreateRefund(ctx, "refund-p-1", p.ID)
	require.NoError(t, err)
	require.Equal(t, payment.StatusPending, rf.Status)
	require.Equal(t, p.ID, rf.PaymentID)
	again2, err := e.client.CreateRefund(ctx, "refund-p-1", p.ID)
	require.NoError(t, err)
	require.Equal(t, rf.ID, again2.ID, "the same key is the same refund")
	_, err = e.client.CreateRefund(ctx, "another-key", p.ID)
	require.ErrorIs(t, err, payment.ErrRejected)
	requireCode(t, err, 409, "already_refunded")

	_, err = e.sb.SettleRefund(rf.ID, sandbox.StatusSucceeded)
	require.NoError(t, err)
	gotRefund, err := e.client.GetRefund(ctx, rf.ID)
	require.NoError(t, err)
	require.Equal(t, payment.StatusSucceeded, gotRefund.Status)
	require.Len(t, e.sb.Refunds(p.ID), 1)
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	e := setup(t)
	_, err := e.client.GetPayment(context.Background(), "pay_missing")
	require.ErrorIs(t, err, payment.ErrNotFound)
	require.ErrorIs(t, err, payment.ErrRejected)
	require.NotErrorIs(t, err, payment.ErrUnknown)
	_, err = e.client.GetRefund(context.Background(), "re_missing")
	require.ErrorIs(t, err, payment.ErrNotFound)
}

// refund_unavailable: the provider says it did nothing; the refund made
// after recovery is the only one.
func TestRefundUnavailable(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	p, err := e.client.CreatePayment(ctx, "pay-p-1", order)
	require.NoError(t, err)
	_, err = e.sb.SettlePayment(p.ID, sandbox.StatusSucceeded)
	require.NoError(t, err)

	require.NoError(t, e.sb.SetFaults(sandbox.Faults{Mode: sandbox.FaultRefundUnavailable}))
	_, err = e.client.CreateRefund(ctx, "refund-p-1", p.ID)
	require.ErrorIs(t, err, payment.ErrUnavailable)
	require.NotErrorIs(t, err, payment.ErrUnknown)
	requireCode(t, err, 503, "refund_unavailable")
	require.Empty(t, e.sb.Refunds(p.ID))

	require.NoError(t, e.sb.SetFaults(sandbox.Faults{Mode: sandbox.FaultNone}))
	_, err = e.client.CreateRefund(ctx, "refund-p-1", p.ID)
	require.NoError(t, err)
	require.Len(t, e.sb.Refunds(p.ID), 1)
}

// no_response: the provider applies the call and never answers. The client
// reports unknown, and asking again with the same key finds the one payment
// that was made.
func TestNoResponseIsUnknown(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	require.NoError(t, e.sb.SetFaults(sandbox.Faults{Mode: sandbox.FaultNoResponse}))

	// The caller would wait a minute; the client's own timeout ends the
	// call first, as unknown.
	callCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err := e.impatient.CreatePayment(callCtx, "pay-p-1", order)
	require.ErrorIs(t, err, payment.ErrUnknown)
	require.NotErrorIs(t, err, payment.ErrRejected)
	require.NoError(t, callCtx.Err(), "bounded by the client's timeout, not the caller's")

	require.NoError(t, e.sb.SetFaults(sandbox.Faults{Mode: sandbox.FaultNone}))
	p, err := e.client.CreatePayment(ctx, "pay-p-1", order)
	require.NoError(t, err)
	got, ok := e.sb.Payment(p.ID)
	require.True(t, ok)
	require.Equal(t, "p-1", got.Reference)
	again, err := e.client.CreatePayment(ctx, "pay-p-1", order)
	require.NoError(t, err)
	require.Equal(t, p.ID, again.ID, "the unanswered call and the retries made one payment")

	require.NoError(t, e.sb.SetFaults(sandbox.Faults{Mode: sandbox.FaultNoResponse}))
	_, err = e.impatient.GetPayment(ctx, p.ID)
	require.ErrorIs(t, err, payment.ErrUnknown)
}

// Answers a real provider can give that the sandbox does not, classified.
func TestClassification(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		body   string
		class  error
	}{
		{"server error", 500, `{"error":{"code":"internal_error","message":"x"}}`, payment.ErrUnknown},
		{"gateway timeout", 504, ``, payment.ErrUnknown},
		{"bare 503", 503, `<html>busy</html>`, payment.ErrUnknown},
		{"declared unavailable", 503, `{"error":{"code":"payments_unavailable","message":"x"}}`, payment.ErrUnavailable},
		{"rate limited", 429, `{"error":{"code":"rate_limited","message":"x"}}`, payment.ErrUnavailable},
		{"bad request", 400, `{"error":{"code":"validation_failed","message":"x"}}`, payment.ErrRejected},
		{"conflict", 409, `{"error":{"code":"idempotency_key_reused","message":"x"}}`, payment.ErrRejected},
		{"undecodable success", 201, `{"payment_id":`, payment.ErrUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c, err := payment.New(payment.Config{BaseURL: srv.URL})
			require.NoError(t, err)
			_, err = c.CreatePayment(context.Background(), "k", order)
			require.ErrorIs(t, err, tt.class)
			classes := 0
			for _, cl := range []error{payment.ErrUnknown, payment.ErrUnavailable, payment.ErrRejected} {
				if errors.Is(err, cl) {
					classes++
				}
			}
			require.Equal(t, 1, classes, "exactly one class: %v", err)
		})
	}
}

func TestTransportErrorIsUnknown(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens any more
	c, err := payment.New(payment.Config{BaseURL: url})
	require.NoError(t, err)
	_, err = c.CreateRefund(context.Background(), "k", "pay_1")
	require.ErrorIs(t, err, payment.ErrUnknown)
}

func TestSendsTheIdempotencyKey(t *testing.T) {
	t.Parallel()
	keys := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys <- r.Header.Get("Idempotency-Key")
		w.WriteHeader(201)
		_, _ = w.Write([]byte(`{"refund_id":"re_1","payment_id":"pay_1","status":"pending"}`))
	}))
	defer srv.Close()
	c, err := payment.New(payment.Config{BaseURL: srv.URL + "/"})
	require.NoError(t, err)
	rf, err := c.CreateRefund(context.Background(), "refund-p-1", "pay_1")
	require.NoError(t, err)
	require.Equal(t, "re_1", rf.ID)
	require.Equal(t, "refund-p-1", <-keys)
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	for _, cfg := range []payment.Config{
		{},
		{BaseURL: "127.0.0.1:4581"},
		{BaseURL: "ftp://x"},
		{BaseURL: "http://x", Timeout: -time.Second},
	} {
		_, err := payment.New(cfg)
		require.Error(t, err, "%+v", cfg)
	}
}

func requireCode(t *testing.T, err error, status int, code string) {
	t.Helper()
	pe, ok := errors.AsType[*payment.ProviderError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, status, pe.StatusCode)
	require.Equal(t, code, pe.Code)
}
