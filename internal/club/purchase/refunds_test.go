package purchase_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/payment"
)

// refundFailed takes a paid purchase whose access could not be granted
// through a refund the provider failed, to needs_reconciliation, as the
// saga does.
func (s *stepsFixture) refundFailed() purchase.Purchase {
	s.T.Helper()
	p := s.waiting()
	_, err := s.deliver(paid(p))
	require.NoError(s.T, err)
	require.NoError(s.T, s.steps.BeginRefund(s.Ctx, p.ID(), "GrantFailed"))
	s.provider.refund = payment.Refund{ID: "re_1", PaymentID: "pay_1", Status: payment.StatusPending}
	_, err = s.steps.Refund(s.Ctx, p.ID())
	require.NoError(s.T, err)
	s.provider.refund.Status = payment.StatusFailed
	require.ErrorIs(s.T, s.steps.CheckRefund(s.Ctx, p.ID()), purchase.ErrRefundFailed)
	require.NoError(s.T, s.steps.NeedReconciliation(s.Ctx, p.ID(), "RefundFailed"))
	return s.Purchase(p.ID())
}

func (s *stepsFixture) resolveRefund(id string) purchase.Purchase {
	s.T.Helper()
	return s.Update(id, func(p *purchase.Purchase) error {
		return p.Resolve(purchase.Resolution{Action: purchase.ActionRefund, By: "ops-ann", Reason: "ticket 7"}, s.Now())
	})
}

// A refund the provider failed is asked for again under a new key,
// recorded before the call; the failed attempt stays as it was.
func TestAFailedRefundIsAskedForAgainUnderANewKey(t *testing.T) {
	t.Parallel()
	s := setupSteps(t)
	p := s.refundFailed()
	require.Equal(t, []string{"refund-" + p.ID() + "-1"}, s.provider.refundKeys)

	got := s.resolveRefund(p.ID())
	require.Equal(t, purchase.StatusRefundPending, got.Status())
	require.Equal(t, "refund-"+p.ID()+"-2", got.RefundKey(), "the new key is on the purchase before the provider is asked")
	require.Len(t, got.Refunds(), 2)
	require.Equal(t, purchase.RefundAttempt{Key: "refund-" + p.ID() + "-1", RefundID: "re_1", Status: purchase.ProviderFailed,
		RequestedAt: got.Refunds()[0].RequestedAt}, got.Refunds()[0])

	s.provider.refund = payment.Refund{ID: "re_2", PaymentID: "pay_1", Status: payment.StatusSucceeded}
	st, err := s.steps.Refund(s.Ctx, p.ID())
	require.NoError(t, err)
	require.Equal(t, purchase.RefundState{RefundID: "re_2", RefundStatus: purchase.ProviderSucceeded}, st)
	require.Equal(t, []string{"refund-" + p.ID() + "-1", "refund-" + p.ID() + "-2"}, s.provider.refundKeys)

	got = s.Purchase(p.ID())
	require.Equal(t, purchase.StatusRefunded, got.Status())
	var outcomes []string
	for _, a := range got.Refunds() {
		outcomes = append(outcomes, a.Key+" "+a.RefundID+" "+string(a.Status))
	}
	require.Equal(t, []string{
		"refund-" + p.ID() + "-1 re_1 failed",
		"refund-" + p.ID() + "-2 re_2 succeeded",
	}, outcomes, "every attempt's outcome is kept")
}

// A refund whose outcome is not known (no answer, or still pending) is
// asked for again under the same key: a new key could make a second refund
// beside one the provider already has.
func TestAnUnsettledRefundIsAskedForAgainUnderTheSameKey(t *testing.T) {
	t.Parallel()
	for name, settle := range map[string]func(s *stepsFixture, id string){
		"no answer": func(s *stepsFixture, id string) {
			s.provider.refundErr = fmt.Errorf("%w: timeout", payment.ErrUnknown)
			_, err := s.steps.Refund(s.Ctx, id)
			require.ErrorIs(s.T, err, purchase.ErrRefundUnknown)
		},
		"pending": func(s *stepsFixture, id string) {
			s.provider.refund = payment.Refund{ID: "re_1", PaymentID: "pay_1", Status: payment.StatusPending}
			_, err := s.steps.Refund(s.Ctx, id)
			require.NoError(s.T, err)
			require.ErrorIs(s.T, s.steps.CheckRefund(s.Ctx, id), purchase.ErrRefundPending)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := setupSteps(t)
			p := s.waiting()
			_, err := s.deliver(paid(p))
			require.NoError(t, err)
			require.NoError(t, s.steps.BeginRefund(s.Ctx, p.ID(), "GrantFailed"))
			settle(s, p.ID())
			require.NoError(t, s.steps.NeedReconciliation(s.Ctx, p.ID(), "gave up"))

			got := s.resolveRefund(p.ID())
			require.Len(t, got.Refunds(), 1, "no new attempt")
			s.provider.refundErr = nil
			s.provider.refund = payment.Refund{ID: "re_1", PaymentID: "pay_1", Status: payment.StatusSucceeded}
			_, err = s.steps.Refund(s.Ctx, p.ID())
			require.NoError(t, err)
			key := "refund-" + p.ID() + "-1"
			require.Equal(t, []string{key, key}, s.provider.refundKeys)
			require.Equal(t, purchase.StatusRefunded, s.Purchase(p.ID()).Status())
		})
	}
}

// The provider's notifications about refunds, in any order against a
// person's new attempt: each lands on its own attempt, and a refund no
// attempt's key can have made is refused.
func TestRefundNotificationsLandOnTheirOwnAttempt(t *testing.T) {
	t.Parallel()
	s := setupSteps(t)
	p := s.refundFailed()
	s.resolveRefund(p.ID())

	ev := func(typ, refundID string) purchase.WebhookEvent {
		return purchase.WebhookEvent{EventID: "evt_" + typ + refundID, Type: typ, PaymentID: "pay_1", RefundID: refundID, Reference: p.ID()}
	}
	// The first refund's failure, delivered again, and a success for it
	// (a provider never reverses a failed refund): nothing changes.
	for _, e := range []purchase.WebhookEvent{ev(purchase.EventRefundFailed, "re_1"), ev(purchase.EventRefundSucceeded, "re_1")} {
		res, err := s.deliver(e)
		require.NoError(t, err)
		require.Equal(t, purchase.OutcomeUnchanged, res.Outcome, e.Type)
	}
	require.Equal(t, purchase.StatusRefundPending, s.Purchase(p.ID()).Status())

	// The second attempt's refund is notified before its Refund step has
	// recorded it: the current attempt adopts it.
	res, err := s.deliver(ev(purchase.EventRefundSucceeded, "re_2"))
	require.NoError(t, err)
	require.Equal(t, purchase.OutcomeRefunded, res.Outcome)
	got := s.Purchase(p.ID())
	require.Equal(t, "re_2", got.Refunds()[1].RefundID)
	require.Equal(t, purchase.ProviderFailed, got.Refunds()[0].Status)

	_, err = s.deliver(ev(purchase.EventRefundSucceeded, "re_3"))
	require.ErrorIs(t, err, purchase.ErrUnknownPayment, "no attempt's key made re_3")
	_, err = s.steps.Refund(s.Ctx, p.ID())
	require.NoError(t, err, "a late Refund step finds the purchase refunded")
	require.Len(t, s.provider.refundKeys, 1, "and asks the provider nothing")
}

// A copy of a purchase is a value: recording a refund on one changes
// nothing on the other.
func TestRecordRefundChangesOnlyItsOwnCopy(t *testing.T) {
	t.Parallel()
	s := setupSteps(t)
	p := s.refundFailed()
	p = s.resolveRefund(p.ID())
	copied := p
	require.NoError(t, copied.RecordRefund("re_2", purchase.ProviderPending))
	require.Empty(t, p.RefundID(), "the original is unchanged")
	require.Equal(t, "re_2", copied.RefundID())
}
