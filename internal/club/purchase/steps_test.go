package purchase_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/club/purchase/purchasetest"
	"github.com/clubdev/club/internal/payment"
)

type stepsFixture struct {
	*webhookFixture
	provider *fakeProvider
	steps    *purchase.Steps
}

func setupSteps(t *testing.T) *stepsFixture {
	t.Helper()
	w := setupWebhooks(t)
	s := &stepsFixture{webhookFixture: w, provider: &fakeProvider{}}
	steps, err := purchase.NewSteps(purchase.StepsDeps{Store: w.mem, Payments: s.provider, Callbacks: w.cb, Now: w.Now})
	require.NoError(t, err)
	s.steps = steps
	return s
}

// The provider's answer classes become the steps' errors; a failed request
// changes nothing.
func TestRequestPaymentClassifiesTheProvider(t *testing.T) {
	t.Parallel()
	tests := []struct {
		providerErr error
		want        error
	}{
		{fmt.Errorf("%w: timeout", payment.ErrUnknown), purchase.ErrPaymentUnknown},
		{fmt.Errorf("%w: 429", payment.ErrUnavailable), purchase.ErrProviderUnavailable},
		{fmt.Errorf("%w: 400", payment.ErrRejected), purchase.ErrPaymentRejected},
	}
	for _, tt := range tests {
		t.Run(tt.want.Error(), func(t *testing.T) {
			t.Parallel()
			s := setupSteps(t)
			in := s.Intensive(1)
			p := s.Buy(in.ID(), "student-1")
			s.provider.payErr = tt.providerErr
			_, err := s.steps.RequestPayment(s.Ctx, p.ID())
			require.ErrorIs(t, err, tt.want)
			require.ErrorIs(t, err, tt.providerErr, "the provider's error is kept")
			require.Equal(t, purchase.StatusReserved, s.Purchase(p.ID()).Status())
		})
	}
}

func TestRequestPayment(t *testing.T) {
	t.Parallel()
	s := setupSteps(t)
	in := s.Intensive(1)
	p := s.Buy(in.ID(), "student-1")
	s.provider.pay = payment.Payment{ID: "pay_1", Status: payment.StatusPending, CheckoutURL: "http://checkout/pay_1"}
	s.Advance(100*time.Second + 300*time.Millisecond)

	got, err := s.steps.RequestPayment(s.Ctx, p.ID())
	require.NoError(t, err)
	require.Equal(t, purchase.PaymentRequested{PaymentID: "pay_1", WaitSeconds: 800}, got, "900 s hold, 100.3 s gone: 799.7 s left, rounded up")
	stored := s.Purchase(p.ID())
	require.Equal(t, purchase.StatusPaymentPending, stored.Status())
	require.Equal(t, "http://checkout/pay_1", stored.CheckoutURL())

	again, err := s.steps.RequestPayment(s.Ctx, p.ID())
	require.NoError(t, err)
	require.Equal(t, got, again, "a repeat returns the recorded payment")
	require.Equal(t, 1, s.provider.calls, "without asking again")

	s.Advance(time.Hour)
	again, err = s.steps.RequestPayment(s.Ctx, p.ID())
	require.NoError(t, err)
	require.Equal(t, int64(1), again.WaitSeconds, "past the deadline the wait is the minimum, then the check")
}

func TestRequestPaymentAfterTheDeadline(t *testing.T) {
	t.Parallel()
	s := setupSteps(t)
	in := s.Intensive(1)
	p := s.Buy(in.ID(), "student-1")
	s.Advance(15 * time.Minute)
	_, err := s.steps.Hold(s.Ctx, p.ID())
	require.ErrorIs(t, err, purchase.ErrHoldExpired)
	_, err = s.steps.RequestPayment(s.Ctx, p.ID())
	require.ErrorIs(t, err, purchase.ErrHoldExpired)
	require.Zero(t, s.provider.calls, "no payment is asked for after the deadline")
}

// Issue 34: no payment request is sent at or past the cutoff (a tenth of
// the hold before its deadline), though the hold still runs; one just
// before it is sent, with only the time left to the cutoff to answer in.
func TestNoPaymentRequestPastTheCutoff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		offset    time.Duration // from the cutoff
		wantCalls int
	}{
		{"0.3 s past the cutoff", 300 * time.Millisecond, 0},
		{"at the cutoff", 0, 0},
		{"0.3 s before the cutoff", -300 * time.Millisecond, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := setupSteps(t)
			p := s.Buy(s.Intensive(1).ID(), "student-1")
			s.provider.pay = payment.Payment{ID: "pay_1", Status: payment.StatusPending, CheckoutURL: "http://checkout/pay_1"}
			cutoff := p.HoldExpiresAt().Add(-90 * time.Second)
			require.Equal(t, cutoff, p.PaymentRequestCutoff(), "a tenth of the 15-minute hold")
			s.Advance(cutoff.Add(tt.offset).Sub(s.Now()))
			require.False(t, p.HoldExpired(s.Now()), "the hold still runs")

			_, err := s.steps.RequestPayment(s.Ctx, p.ID())
			require.Equal(t, tt.wantCalls, s.provider.calls, "requests sent to the provider")
			if tt.wantCalls == 0 {
				require.ErrorIs(t, err, purchase.ErrHoldExpired)
				require.Equal(t, purchase.StatusReserved, s.Purchase(p.ID()).Status(), "nothing recorded")
				return
			}
			require.NoError(t, err)
			require.Equal(t, purchase.StatusPaymentPending, s.Purchase(p.ID()).Status())
			left := time.Until(s.provider.payDeadline)
			require.Positive(t, left)
			require.LessOrEqual(t, left, 300*time.Millisecond, "the call may take only the time left to the cutoff")
		})
	}
}

// Issue 34: the wait before asking a silent provider again ends before the
// cutoff, so the next request is sent before it; with a second or less
// left no whole second fits: the wait ends past the cutoff, and the
// request step then sends nothing and expires the purchase.
func TestWaitForProviderEndsBeforeTheCutoff(t *testing.T) {
	t.Parallel()
	for _, left := range []time.Duration{
		29*time.Second + 500*time.Millisecond, 2 * time.Second, 1500 * time.Millisecond,
		1001 * time.Millisecond, time.Second, 300 * time.Millisecond,
	} {
		t.Run(left.String(), func(t *testing.T) {
			t.Parallel()
			s := setupSteps(t)
			p := s.Buy(s.Intensive(1).ID(), "student-1")
			s.Advance(p.PaymentRequestCutoff().Add(-left).Sub(s.Now()))
			w, err := s.steps.WaitForProvider(s.Ctx, p.ID(), 10, "timeout") // the 30 s cap
			require.NoError(t, err)
			require.GreaterOrEqual(t, w.WaitSeconds, int64(1))
			next := s.Now().Add(time.Duration(w.WaitSeconds) * time.Second)
			if left <= time.Second {
				require.Equal(t, int64(1), w.WaitSeconds)
				s.Advance(time.Second)
				_, err := s.steps.RequestPayment(s.Ctx, p.ID())
				require.ErrorIs(t, err, purchase.ErrHoldExpired)
				require.Zero(t, s.provider.calls, "no request past the cutoff")
				return
			}
			require.True(t, next.Before(p.PaymentRequestCutoff()), "next request at %s, cutoff %s", next, p.PaymentRequestCutoff())
			require.GreaterOrEqual(t, time.Duration(w.WaitSeconds)*time.Second, left-time.Second, "and not much before it")
		})
	}
}

// A lagging provider read does not undo what a webhook said.
func TestCheckPaymentKeepsTheMostFinalStatus(t *testing.T) {
	t.Parallel()
	s := setupSteps(t)
	p := s.waiting()
	require.NoError(t, s.steps.StartChecking(s.Ctx, p.ID()))
	_, err := s.deliver(paid(p))
	require.NoError(t, err)
	require.Empty(t, s.cb.success, "the wait is over: nothing to complete")

	s.provider.pay = payment.Payment{ID: "pay_1", Status: payment.StatusPending}
	out, err := s.steps.CheckPayment(s.Ctx, p.ID())
	require.NoError(t, err)
	require.Equal(t, purchase.ProviderSucceeded, out.PaymentStatus)

	// The saga would now grant; an expiry racing it is refused.
	require.ErrorIs(t, s.steps.Expire(s.Ctx, p.ID(), "pending at the deadline"), purchase.ErrPaymentSucceeded)
	require.NoError(t, s.steps.Grant(s.Ctx, p.ID()))
	require.Equal(t, purchase.StatusConfirmed, s.Purchase(p.ID()).Status())
}

func TestCheckPaymentUnknown(t *testing.T) {
	t.Parallel()
	s := setupSteps(t)
	p := s.waiting()
	require.NoError(t, s.steps.StartChecking(s.Ctx, p.ID()))
	s.provider.payErr = fmt.Errorf("%w: no answer", payment.ErrUnknown)
	_, err := s.steps.CheckPayment(s.Ctx, p.ID())
	require.ErrorIs(t, err, purchase.ErrPaymentUnknown)
	require.NoError(t, s.steps.NeedReconciliation(s.Ctx, p.ID(), "PaymentUnknown: no answer"))
	got := s.Purchase(p.ID())
	require.Equal(t, purchase.StatusNeedsReconciliation, got.Status())
	_, held, _ := s.Seats(p.IntensiveID())
	require.Equal(t, 1, held, "the hold is kept for the person who decides")
}

func TestRefundSteps(t *testing.T) {
	t.Parallel()
	s := setupSteps(t)
	p := s.waiting()
	_, err := s.deliver(paid(p))
	require.NoError(t, err)

	_, err = s.steps.Refund(s.Ctx, p.ID())
	require.ErrorIs(t, err, purchase.ErrStaleStep, "no refund intent yet")
	require.NoError(t, s.steps.BeginRefund(s.Ctx, p.ID(), "GrantFailed"))

	s.provider.refundErr = fmt.Errorf("%w: refund_unavailable", payment.ErrUnavailable)
	_, err = s.steps.Refund(s.Ctx, p.ID())
	require.ErrorIs(t, err, purchase.ErrProviderUnavailable)
	require.Equal(t, purchase.StatusRefundPending, s.Purchase(p.ID()).Status())

	s.provider.refundErr = nil
	s.provider.refund = payment.Refund{ID: "re_1", PaymentID: "pay_1", Status: payment.StatusPending}
	st, err := s.steps.Refund(s.Ctx, p.ID())
	require.NoError(t, err)
	require.Equal(t, purchase.RefundState{RefundID: "re_1", RefundStatus: purchase.ProviderPending}, st)
	require.ErrorIs(t, s.steps.CheckRefund(s.Ctx, p.ID()), purchase.ErrRefundPending)

	s.provider.refund.Status = payment.StatusFailed
	require.ErrorIs(t, s.steps.CheckRefund(s.Ctx, p.ID()), purchase.ErrRefundFailed)
	require.NoError(t, s.steps.NeedReconciliation(s.Ctx, p.ID(), "RefundFailed"))
	require.Equal(t, purchase.StatusNeedsReconciliation, s.Purchase(p.ID()).Status())
}

func TestNewStepsNeedsItsPorts(t *testing.T) {
	t.Parallel()
	_, err := purchase.NewSteps(purchase.StepsDeps{})
	require.ErrorContains(t, err, "Store")
	require.ErrorContains(t, err, "Payments")
	require.ErrorContains(t, err, "Callbacks")
	_, err = purchase.NewWebhooks(purchase.WebhooksDeps{Store: purchasetest.NewMemory()})
	require.ErrorContains(t, err, "Secret")
}
