package purchase_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club/purchase"
)

// keyedProvider is a payment provider's refunds as the real ones behave
// where it matters here: a key names one refund, and a reused key replays
// it as it is now. It allows any number of refunds of a payment, so that
// "at most one succeeds" is the saga's doing, not the provider's. A call
// may take effect and lose its answer.
type keyedProvider struct {
	purchase.PaymentProvider
	refunds []purchase.ProviderRefund // in creation order
	byKey   map[string]int
	// loseAnswer makes the next CreateRefund take effect and answer
	// ErrProviderCallUnknown.
	loseAnswer bool
}

func (k *keyedProvider) CreateRefund(_ context.Context, key, paymentID string) (purchase.ProviderRefund, error) {
	i, ok := k.byKey[key]
	if !ok {
		i = len(k.refunds)
		k.refunds = append(k.refunds, purchase.ProviderRefund{
			ID: fmt.Sprintf("re_%d", i+1), PaymentID: paymentID, Status: purchase.ProviderPending,
		})
		k.byKey[key] = i
	}
	if k.loseAnswer {
		k.loseAnswer = false
		return purchase.ProviderRefund{}, fmt.Errorf("%w: timeout", purchase.ErrProviderCallUnknown)
	}
	return k.refunds[i], nil
}

func (k *keyedProvider) GetRefund(_ context.Context, id string) (purchase.ProviderRefund, error) {
	for _, r := range k.refunds {
		if r.ID == id {
			return r, nil
		}
	}
	return purchase.ProviderRefund{}, fmt.Errorf("%w: no refund %s", purchase.ErrProviderCallRejected, id)
}

func (k *keyedProvider) succeeded() int {
	n := 0
	for _, r := range k.refunds {
		if r.Status == purchase.ProviderSucceeded {
			n++
		}
	}
	return n
}

// Issue 34: whatever the order of the saga's refund steps, the provider's
// answers (lost ones included), its webhooks (late, repeated, reordered),
// a saga giving up and a person's refund decisions, at most one refund of
// the payment succeeds at the provider; the purchase is refunded only with
// it; and once the provider stops failing refunds, a person's decisions get
// the money back. Seeded: a failure names its seed.
func TestAtMostOneRefundSucceedsWhateverTheInterleaving(t *testing.T) {
	t.Parallel()
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 34))
			s := setupSteps(t)
			p := s.waiting()
			_, err := s.deliver(paid(p))
			require.NoError(t, err)
			require.NoError(t, s.steps.BeginRefund(s.Ctx, p.ID(), "GrantFailed"))
			kp := &keyedProvider{byKey: map[string]int{}}
			steps, err := purchase.NewSteps(purchase.StepsDeps{Store: s.mem, Payments: kp, Callbacks: s.cb, Now: s.Now})
			require.NoError(t, err)

			var webhooks []purchase.WebhookEvent // raised, not yet delivered
			settle := func(fail bool) {
				i := slices.IndexFunc(kp.refunds, func(r purchase.ProviderRefund) bool { return r.Status == purchase.ProviderPending })
				if i < 0 {
					return
				}
				typ, st := purchase.EventRefundSucceeded, purchase.ProviderSucceeded
				if fail {
					typ, st = purchase.EventRefundFailed, purchase.ProviderFailed
				}
				kp.refunds[i].Status = st
				webhooks = append(webhooks, purchase.WebhookEvent{
					EventID: fmt.Sprintf("evt_%d", len(webhooks)), Type: typ, PaymentID: "pay_1", RefundID: kp.refunds[i].ID, Reference: p.ID(),
				})
			}
			check := func(what string) {
				got := s.Purchase(p.ID())
				require.LessOrEqual(t, kp.succeeded(), 1, "after %s: refunds %+v", what, kp.refunds)
				if got.Status() == purchase.StatusRefunded {
					i := slices.IndexFunc(kp.refunds, func(r purchase.ProviderRefund) bool { return r.ID == got.RefundID() })
					require.GreaterOrEqual(t, i, 0, "after %s", what)
					require.Equal(t, purchase.ProviderSucceeded, kp.refunds[i].Status, "after %s: refunded only with a succeeded refund", what)
				}
				attempts := got.Refunds()
				for _, a := range attempts[:max(len(attempts)-1, 0)] {
					require.Equal(t, purchase.ProviderFailed, a.Status, "after %s: a new key only after a failed refund: %+v", what, attempts)
				}
			}
			act := func(failing bool) string {
				switch rng.IntN(7) {
				case 0:
					kp.loseAnswer = rng.IntN(3) == 0
					_, _ = steps.Refund(s.Ctx, p.ID())
					return "refund step"
				case 1:
					if err := steps.CheckRefund(s.Ctx, p.ID()); errors.Is(err, purchase.ErrRefundFailed) || rng.IntN(4) == 0 && err != nil {
						_ = steps.NeedReconciliation(s.Ctx, p.ID(), "gave up") // the saga's bound, or a failed refund
					}
					return "check refund"
				case 2:
					settle(failing && rng.IntN(2) == 0)
					return "provider settles"
				case 3, 4:
					if len(webhooks) > 0 {
						i := rng.IntN(len(webhooks))
						_, _ = s.deliver(webhooks[i])
						if rng.IntN(3) > 0 { // else delivered again later
							webhooks = slices.Delete(webhooks, i, i+1)
						}
					}
					return "webhook"
				case 5:
					_ = steps.NeedReconciliation(s.Ctx, p.ID(), "gave up")
					return "saga gives up"
				default:
					if s.Purchase(p.ID()).Status() == purchase.StatusNeedsReconciliation {
						_ = s.Update(p.ID(), func(p *purchase.Purchase) error {
							return p.Resolve(purchase.Resolution{Action: purchase.ActionRefund, By: "ops-ann", Reason: "ticket 34"}, s.Now())
						})
					}
					return "person refunds"
				}
			}
			for range 40 {
				check(act(true))
			}
			// The provider recovers: refunds no longer fail, and every
			// action goes on until the money is back.
			for range 400 {
				if s.Purchase(p.ID()).Status() == purchase.StatusRefunded {
					break
				}
				check(act(false))
			}
			require.Equal(t, purchase.StatusRefunded, s.Purchase(p.ID()).Status(), "refunds %+v, attempts %+v", kp.refunds, s.Purchase(p.ID()).Refunds())
			require.Equal(t, 1, kp.succeeded())
		})
	}
}
