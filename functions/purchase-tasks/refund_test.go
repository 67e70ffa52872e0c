package main

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/payment"
	sandbox "github.com/clubdev/club/internal/sandbox/payment"
	"github.com/clubdev/club/localcloud/sfn"
)

// confirmed runs a purchase through the happy path.
func (e *env) confirmed(intensiveID, student string) purchase.Purchase {
	e.t.Helper()
	p := e.buy(intensiveID, student)
	arn := e.startSaga(p)
	e.settle(e.waitingForPayment(p.ID()), sandbox.StatusSucceeded, purchase.StatusPaymentPending)
	require.Equal(e.t, sfn.StatusSucceeded, e.finish(arn).Status)
	return e.purchase(p.ID())
}

// expired runs a purchase until its hold expires without payment, and
// stops virtual time again.
func (e *env) expired(intensiveID, student string) purchase.Purchase {
	e.t.Helper()
	p := e.buy(intensiveID, student)
	arn := e.startSaga(p)
	e.waitingForPayment(p.ID())
	e.autoAdvance()
	require.Equal(e.t, sfn.StatusSucceeded, e.finish(arn).Status)
	e.stopAuto()
	got := e.purchase(p.ID())
	require.Equal(e.t, purchase.StatusExpired, got.Status())
	return got
}

// latePayment pays an expired purchase at the sandbox, waits for the
// webhook to record the refund intent, and relays its refund.requested row.
func (e *env) latePayment(p purchase.Purchase) purchase.Purchase {
	e.t.Helper()
	got := e.settle(p, sandbox.StatusSucceeded, purchase.StatusExpired)
	require.Equal(e.t, purchase.StatusRefundPending, got.Status(), "the student sees refund_pending")
	require.True(e.t, got.LatePayment())
	e.waitFor("the late webhook to record the refund intent", func() bool {
		return slices.Contains(e.outcomes(purchase.EventPaymentSucceeded), purchase.OutcomeLatePayment)
	})
	require.Equal(e.t, 1, e.relayRefunds(p.ID()), "one refund.requested row, written with the intent")
	return got
}

// Paid, but access cannot be granted (the student already has it from an
// earlier purchase): refund_pending → refund with the stable key →
// refunded; the held seat goes back.
func TestSagaGrantFailsRefunds(t *testing.T) {
	t.Parallel()
	e := setup(t)
	in := e.intensive(2)
	e.confirmed(in.ID(), "student-1")

	again := e.buy(in.ID(), "student-1")
	arn := e.startSaga(again)
	waiting := e.waitingForPayment(again.ID())
	e.settle(waiting, sandbox.StatusSucceeded, purchase.StatusPaymentPending)
	e.autoAdvance() // the provider completes refunds after a delay
	x := e.finish(arn)
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+" "+x.Cause)

	got := e.purchase(again.ID())
	require.Equal(t, []purchase.Status{
		purchase.StatusReserved, purchase.StatusPaymentPending, purchase.StatusRefundPending, purchase.StatusRefunded,
	}, statuses(got))
	require.Contains(t, got.Note(), "GrantFailed")
	require.False(t, got.LatePayment())
	refunds := e.sb.Refunds(waiting.PaymentID())
	require.Len(t, refunds, 1)
	require.Equal(t, got.RefundID(), refunds[0].RefundID)
	require.Equal(t, [3]int{1, 0, 1}, e.seats(in.ID()), "the first purchase keeps its seat; the second's hold is back")
}

// Late payment after expiry, the seat already sold to someone else:
// refund_pending → refunded, exactly one refund for that payment, seat
// counters unchanged.
func TestSagaLatePaymentIsRefunded(t *testing.T) {
	t.Parallel()
	e := setup(t)
	in := e.intensive(1)
	late := e.expired(in.ID(), "student-1")
	e.confirmed(in.ID(), "student-2") // the seat went to someone else
	before := e.seats(in.ID())
	require.Equal(t, [3]int{0, 0, 1}, before)

	e.latePayment(late)
	// student-2's delivery is recorded when the sandbox has its answer, which
	// can be after the saga it advanced moved on: the two outcomes in either
	// order.
	e.waitFor("both payment.succeeded deliveries recorded", func() bool {
		return len(e.outcomes(purchase.EventPaymentSucceeded)) >= 2
	})
	require.ElementsMatch(t, []purchase.WebhookOutcome{purchase.OutcomeCallbackSent, purchase.OutcomeLatePayment},
		e.outcomes(purchase.EventPaymentSucceeded), "student-2's payment sent the saga its callback; the late one asked for a refund")
	e.autoAdvance()
	x := e.finish(e.executionARN(purchase.RefundExecutionName(late.ID())))
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+" "+x.Cause)

	got := e.purchase(late.ID())
	require.Equal(t, []purchase.Status{
		purchase.StatusReserved, purchase.StatusPaymentPending, purchase.StatusCheckingPayment,
		purchase.StatusExpired, purchase.StatusRefundPending, purchase.StatusRefunded,
	}, statuses(got))
	require.Len(t, e.sb.Refunds(late.PaymentID()), 1)
	require.Equal(t, before, e.seats(in.ID()), "a late payment never adds a seat")
}

// Exercise 2: the late webhook repeated (the provider's duplicates and
// resends) makes one refund and changes nothing else.
func TestSagaRepeatedLateWebhookRefundsOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	in := e.intensive(1)
	late := e.expired(in.ID(), "student-1")
	require.NoError(t, e.sb.SetFaults(sandbox.Faults{Mode: sandbox.FaultDuplicateWebhooks}))
	e.latePayment(late)
	var eventID string
	for _, rec := range e.sb.Events() {
		if rec.Event.Type == sandbox.EventPaymentSucceeded && rec.Event.PaymentID == late.PaymentID() {
			eventID = rec.Event.EventID
		}
	}
	require.NotEmpty(t, eventID)
	e.frozen(func() {
		for range 3 {
			require.NoError(t, e.sb.Resend(eventID)) // each delivered twice
		}
		e.waitFor("the resent webhooks", func() bool { return len(e.outcomes(purchase.EventPaymentSucceeded)) == 8 })
	})
	require.Equal(t, purchase.StatusRefundPending, e.purchase(late.ID()).Status())
	require.Equal(t, 1, e.relayRefunds(late.ID()), "the repeats wrote no second row; relaying it again starts nothing new")

	e.autoAdvance()
	require.Equal(t, sfn.StatusSucceeded, e.finish(e.executionARN(purchase.RefundExecutionName(late.ID()))).Status)
	e.waitFor("the refund webhook", func() bool { return len(e.outcomes(purchase.EventRefundSucceeded)) >= 1 })

	count := map[purchase.WebhookOutcome]int{}
	for _, o := range e.outcomes(purchase.EventPaymentSucceeded) {
		count[o]++
	}
	require.Equal(t, map[purchase.WebhookOutcome]int{purchase.OutcomeLatePayment: 1, purchase.OutcomeUnchanged: 7}, count,
		"eight deliveries, all answered 200, one acted")
	require.Len(t, e.sb.Refunds(late.PaymentID()), 1, "exactly one refund")
	require.Equal(t, int64(1), e.provider.createRefund.Load())
	require.Len(t, mustList(t, e), 2, "the saga and one refund execution")
	got := e.purchase(late.ID())
	require.Equal(t, purchase.StatusRefunded, got.Status())
	require.Equal(t, [3]int{1, 0, 0}, e.seats(in.ID()))
}

// Exercise 2: the refund provider is unavailable. The purchase stays
// refund_pending, visible, while the saga retries; once the provider
// recovers the one refund goes through.
func TestSagaRefundProviderUnavailable(t *testing.T) {
	t.Parallel()
	e := setup(t)
	in := e.intensive(1)
	late := e.expired(in.ID(), "student-1")
	require.NoError(t, e.sb.SetFaults(sandbox.Faults{Mode: sandbox.FaultRefundUnavailable}))
	// Runs in the function, not the test's goroutine: record, assert later.
	var mu sync.Mutex
	var refused []error
	var seen []purchase.Status
	e.provider.afterRefund = func(attempt int64, err error) {
		mu.Lock()
		defer mu.Unlock()
		if attempt <= 3 {
			refused = append(refused, err)
			p, gerr := e.store.Purchases.Get(e.ctx, late.ID())
			if gerr == nil {
				seen = append(seen, p.Status())
			}
		}
		if attempt == 3 {
			_ = e.sb.SetFaults(sandbox.Faults{Mode: sandbox.FaultNone}) // the provider recovers
		}
	}
	e.latePayment(late)
	e.autoAdvance()
	x := e.finish(e.executionARN(purchase.RefundExecutionName(late.ID())))
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+" "+x.Cause)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, refused, 3)
	for _, err := range refused {
		require.ErrorIs(t, err, payment.ErrUnavailable)
	}
	require.Equal(t, []purchase.Status{purchase.StatusRefundPending, purchase.StatusRefundPending, purchase.StatusRefundPending}, seen,
		"the unfinished money result stays visible")
	require.Equal(t, int64(4), e.provider.createRefund.Load(), "three refused, the fourth accepted")
	require.Len(t, e.sb.Refunds(late.PaymentID()), 1)
	require.Equal(t, purchase.StatusRefunded, e.purchase(late.ID()).Status())
	require.Equal(t, [3]int{1, 0, 0}, e.seats(in.ID()))
}

// Exercise 2: the function crashes right after the provider accepted the
// refund, before recording it. The retry asks again with the same key:
// still exactly one refund.
func TestSagaCrashAfterRefundAccepted(t *testing.T) {
	t.Parallel()
	e := setup(t)
	in := e.intensive(1)
	late := e.expired(in.ID(), "student-1")
	e.provider.afterRefund = func(attempt int64, err error) {
		if attempt == 1 && err == nil {
			panic("crash after the refund was accepted")
		}
	}
	e.latePayment(late)
	e.autoAdvance()
	arn := e.executionARN(purchase.RefundExecutionName(late.ID()))
	require.Equal(t, sfn.StatusSucceeded, e.finish(arn).Status)

	require.Equal(t, int64(2), e.provider.createRefund.Load())
	require.Len(t, e.sb.Refunds(late.PaymentID()), 1, "one refund despite the crash")
	require.Equal(t, purchase.StatusRefunded, e.purchase(late.ID()).Status())
	history, err := e.sfn.GetExecutionHistory(e.ctx, arn)
	require.NoError(t, err)
	crashed := false
	for _, ev := range history {
		if ev.Details.Error == "Runtime.ExitError" {
			crashed = true
		}
	}
	require.True(t, crashed, "the crash was a failed invocation, retried")
}

// Issue 34: the provider fails a late payment's refund, then the refund a
// person asks for again. Each attempt asks under its own key (a provider
// replays a reused key's first answer, so the same key could never succeed);
// the purchase waits in needs_reconciliation after each failure, and the
// third attempt gets the money back: three refunds at the provider, exactly
// one succeeded, seats unchanged.
func TestSagaFailedRefundsAreAskedForAgainUnderNewKeys(t *testing.T) {
	t.Parallel()
	e := setup(t)
	in := e.intensive(1)
	late := e.expired(in.ID(), "student-1")
	before := e.seats(in.ID())
	e.provider.afterRefund = func(attempt int64, err error) {
		if err != nil || attempt > 2 {
			return
		}
		rfs := e.sb.Refunds(late.PaymentID())
		if _, err := e.sb.SettleRefund(rfs[len(rfs)-1].RefundID, sandbox.StatusFailed); err != nil {
			panic(err) // runs in the function: the saga would see a crash, and the test its result
		}
	}
	e.latePayment(late)

	for n := 1; n <= 3; n++ {
		name := purchase.RefundRequestExecutionName(events.RefundRequested{PurchaseID: late.ID(), Attempt: n})
		e.autoAdvance()
		x := e.finish(e.executionARN(name))
		e.stopAuto()
		got := e.purchase(late.ID())
		require.Equal(t, purchase.RefundKey(late.ID(), n), got.RefundKey())
		if n == 3 {
			require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+" "+x.Cause)
			require.Equal(t, purchase.StatusRefunded, got.Status())
			break
		}
		require.Equal(t, sfn.StatusFailed, x.Status, "refund %d failed: the execution hands over", n)
		require.Equal(t, purchase.StatusNeedsReconciliation, got.Status())
		require.Contains(t, got.Note(), "RefundFailed")
		_, err := e.store.Purchases.Update(e.ctx, late.ID(), func(p *purchase.Purchase) error {
			return p.Resolve(purchase.Resolution{Action: purchase.ActionRefund, By: "ops-ann", Reason: "refund failed, ticket 34"}, e.clk.Now())
		})
		require.NoError(t, err, "a person's refund")
		require.Equal(t, n+1, e.relayRefunds(late.ID()), "a refund.requested row per intent")
	}

	var keys, outcomes []string
	for _, a := range e.purchase(late.ID()).Refunds() {
		keys = append(keys, a.Key)
		outcomes = append(outcomes, string(a.Status))
	}
	require.Equal(t, []string{purchase.RefundKey(late.ID(), 1), purchase.RefundKey(late.ID(), 2), purchase.RefundKey(late.ID(), 3)}, keys)
	require.Equal(t, []string{"failed", "failed", "succeeded"}, outcomes, "every attempt's outcome is kept")
	var atProvider []sandbox.Status
	for _, rf := range e.sb.Refunds(late.PaymentID()) {
		atProvider = append(atProvider, rf.Status)
	}
	require.Equal(t, []sandbox.Status{sandbox.StatusFailed, sandbox.StatusFailed, sandbox.StatusSucceeded}, atProvider,
		"exactly one refund succeeded at the provider")
	require.Equal(t, before, e.seats(in.ID()), "seats unchanged")
}

// Exercise 2: an old handler re-run (a step invoked again after the saga
// moved on) changes nothing: no status, no seat, no payment, no refund.
func TestOldHandlerRerunChangesNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	in := e.intensive(2)
	done := e.confirmed(in.ID(), "student-1")
	seats := e.seats(in.ID())
	history := statuses(done)

	for _, in := range []TaskInput{
		{Step: StepHold},
		{Step: StepRequestPayment},
		{Step: StepAwaitPayment, TaskToken: "an-old-token"},
		{Step: StepStartChecking},
		{Step: StepCheckPayment},
		{Step: StepExpire},
		{Step: StepBeginRefund},
		{Step: StepRefund},
		{Step: StepCheckRefund},
		{Step: StepNeedsReconciliation},
	} {
		in.PurchaseID = done.ID()
		_, err := e.handler.Handle(e.ctx, in)
		var stale *StaleStep
		require.ErrorAs(t, err, &stale, "step %s", in.Step)
	}
	// Granting again is an exact repeat: a no-op success.
	_, err := e.handler.Handle(e.ctx, TaskInput{Step: StepGrant, PurchaseID: done.ID()})
	require.NoError(t, err)

	got := e.purchase(done.ID())
	require.Equal(t, history, statuses(got))
	require.Equal(t, seats, e.seats(in.ID()))
	require.Empty(t, e.sb.Refunds(""))
	require.Zero(t, e.provider.createRefund.Load())
	events := e.sb.Events()
	require.Len(t, events, 1, "one payment event, from the student's payment")
	b, _ := json.Marshal(events[0].Event)
	require.Contains(t, string(b), done.PaymentID())
}
