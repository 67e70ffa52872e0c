package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club/purchase"
	sandbox "github.com/clubdev/club/internal/sandbox/payment"
	"github.com/clubdev/club/localcloud/sfn"
)

// Happy path: reserved → payment_pending with a payment id → the student
// pays → the webhook completes the wait → confirmed, one seat taken.
func TestSagaHappyPath(t *testing.T) {
	t.Parallel()
	e := setup(t)
	in := e.intensive(2)
	p := e.buy(in.ID(), "student-1")
	require.Equal(t, [3]int{1, 1, 0}, e.seats(in.ID()))
	arn := e.startSaga(p)

	waiting := e.waitingForPayment(p.ID())
	require.NotEmpty(t, waiting.PaymentID())
	require.NotEmpty(t, waiting.CheckoutURL())
	// A republished purchase.requested starts nothing new.
	_, err := e.sfn.StartExecution(e.ctx, sfn.StartExecutionInput{StateMachineArn: e.machine, Name: p.ID(), Input: mustExecutionInput(t, e, arn)})
	require.NoError(t, err)

	e.settle(waiting, sandbox.StatusSucceeded, purchase.StatusPaymentPending)
	x := e.finish(arn)
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+" "+x.Cause)

	got := e.purchase(p.ID())
	require.Equal(t, purchase.StatusConfirmed, got.Status())
	require.Equal(t, []purchase.Status{purchase.StatusReserved, purchase.StatusPaymentPending, purchase.StatusConfirmed}, statuses(got))
	require.Equal(t, [3]int{1, 0, 1}, e.seats(in.ID()))
	require.Empty(t, got.TaskToken())
	pay, ok := e.sb.Payment(got.PaymentID())
	require.True(t, ok)
	require.Equal(t, p.ID(), pay.Reference)
	// The endpoint records a delivery after its handling, which the saga
	// may have acted on already.
	e.waitFor("the webhook's delivery", func() bool { return len(e.outcomes(purchase.EventPaymentSucceeded)) == 1 })
	require.Equal(t, []purchase.WebhookOutcome{purchase.OutcomeCallbackSent}, e.outcomes(purchase.EventPaymentSucceeded))
	require.Len(t, mustList(t, e), 1, "one execution for the purchase")
}

// Duplicate webhooks (the provider sends each twice): the second changes
// nothing and is answered 200.
func TestSagaDuplicateWebhooks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	require.NoError(t, e.sb.SetFaults(sandbox.Faults{Mode: sandbox.FaultDuplicateWebhooks}))
	in := e.intensive(1)
	p := e.buy(in.ID(), "student-1")
	arn := e.startSaga(p)
	e.settle(e.waitingForPayment(p.ID()), sandbox.StatusSucceeded, purchase.StatusPaymentPending)
	require.Equal(t, sfn.StatusSucceeded, e.finish(arn).Status)
	e.waitFor("the duplicate webhook", func() bool { return len(e.outcomes(purchase.EventPaymentSucceeded)) == 2 })
	require.Equal(t, []purchase.WebhookOutcome{purchase.OutcomeCallbackSent, purchase.OutcomeUnchanged}, e.outcomes(purchase.EventPaymentSucceeded))
	require.Equal(t, purchase.StatusConfirmed, e.purchase(p.ID()).Status())
	require.Equal(t, [3]int{0, 0, 1}, e.seats(in.ID()))
}

// No payment: at the hold deadline the saga asks the provider, which says
// pending, and the purchase expires within a minute of the deadline; the
// seat is free again for another student.
func TestSagaNoPaymentExpiresAtTheDeadline(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.autoAdvance()
	in := e.intensive(1)
	p := e.buy(in.ID(), "student-1")
	x := e.finish(e.startSaga(p))
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+" "+x.Cause)

	got := e.purchase(p.ID())
	require.Equal(t, purchase.StatusExpired, got.Status())
	require.Equal(t, []purchase.Status{
		purchase.StatusReserved, purchase.StatusPaymentPending, purchase.StatusCheckingPayment, purchase.StatusExpired,
	}, statuses(got))
	expiredAt := at(t, got, purchase.StatusExpired)
	require.False(t, expiredAt.Before(got.HoldExpiresAt()), "not before the deadline")
	require.LessOrEqual(t, expiredAt.Sub(got.HoldExpiresAt()), time.Minute, "the seat is released within 60 s of the deadline")
	require.Equal(t, [3]int{1, 0, 0}, e.seats(in.ID()))
	require.Contains(t, got.Note(), "pending")

	next := e.buy(in.ID(), "student-2")
	require.Equal(t, purchase.StatusReserved, next.Status())
	require.Equal(t, [3]int{0, 1, 0}, e.seats(in.ID()))
}

// Payment failed: the webhook fails the wait, the purchase expires and the
// seat is released.
func TestSagaPaymentFailedExpires(t *testing.T) {
	t.Parallel()
	e := setup(t)
	in := e.intensive(1)
	p := e.buy(in.ID(), "student-1")
	arn := e.startSaga(p)
	e.settle(e.waitingForPayment(p.ID()), sandbox.StatusFailed, purchase.StatusPaymentPending)
	require.Equal(t, sfn.StatusSucceeded, e.finish(arn).Status)
	got := e.purchase(p.ID())
	require.Equal(t, purchase.StatusExpired, got.Status())
	require.Equal(t, purchase.ProviderFailed, got.PaymentStatus())
	require.Contains(t, got.Note(), purchase.TaskErrorPaymentFailed)
	require.Equal(t, [3]int{1, 0, 0}, e.seats(in.ID()))
	// The endpoint records a delivery after its handling, which the saga
	// may have acted on already.
	e.waitFor("the webhook's delivery", func() bool { return len(e.outcomes(purchase.EventPaymentFailed)) == 1 })
	require.Equal(t, []purchase.WebhookOutcome{purchase.OutcomeCallbackSent}, e.outcomes(purchase.EventPaymentFailed))
}

// The webhook never arrives but the provider says succeeded: confirmed by
// way of checking_payment.
func TestSagaNoWebhookButPaidIsConfirmedByChecking(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.dropWebhooks.Store(true)
	in := e.intensive(1)
	p := e.buy(in.ID(), "student-1")
	arn := e.startSaga(p)
	waiting := e.waitingForPayment(p.ID())
	_, err := e.sb.SettlePayment(waiting.PaymentID(), sandbox.StatusSucceeded)
	require.NoError(t, err)
	e.autoAdvance()
	require.Equal(t, sfn.StatusSucceeded, e.finish(arn).Status)

	got := e.purchase(p.ID())
	require.Equal(t, []purchase.Status{
		purchase.StatusReserved, purchase.StatusPaymentPending, purchase.StatusCheckingPayment, purchase.StatusConfirmed,
	}, statuses(got))
	require.Equal(t, [3]int{0, 0, 1}, e.seats(in.ID()))
}

// The provider never answers at the deadline: the saga keeps the purchase
// in checking_payment, asks again with bounded exponential backoff, then
// hands it to a person. It never refunds, and the seat stays held for the
// person to decide.
func TestSagaProviderSilentNeedsReconciliation(t *testing.T) {
	t.Parallel()
	e := setup(t)
	in := e.intensive(1)
	p := e.buy(in.ID(), "student-1")
	arn := e.startSaga(p)
	e.waitingForPayment(p.ID())
	require.NoError(t, e.sb.SetFaults(sandbox.Faults{Mode: sandbox.FaultNoResponse}))
	e.autoAdvance()

	x := e.finish(arn)
	require.Equal(t, sfn.StatusFailed, x.Status)
	require.Equal(t, "NeedsReconciliation", x.Error)
	got := e.purchase(p.ID())
	require.Equal(t, []purchase.Status{
		purchase.StatusReserved, purchase.StatusPaymentPending, purchase.StatusCheckingPayment, purchase.StatusNeedsReconciliation,
	}, statuses(got))
	require.Contains(t, got.Note(), "PaymentUnknown")
	require.Equal(t, int64(7), e.provider.getPayment.Load(), "one check and six retries (MaxAttempts 6)")
	require.Zero(t, e.provider.createRefund.Load(), "never a compensation for an unknown result")
	require.Equal(t, [3]int{0, 1, 0}, e.seats(in.ID()))

	checking := at(t, got, purchase.StatusCheckingPayment)
	gaveUp := at(t, got, purchase.StatusNeedsReconciliation)
	require.False(t, checking.Before(got.HoldExpiresAt()))
	// Backoff 10 s doubling, capped at 120 s, with full jitter: at most
	// 10+20+40+80+120+120 s of waiting.
	require.LessOrEqual(t, gaveUp.Sub(checking), 390*time.Second)
}

// A saga that starts after the hold deadline (the relay was down) expires
// the purchase without asking for a payment.
func TestSagaStartedAfterTheDeadlineExpires(t *testing.T) {
	t.Parallel()
	e := setup(t)
	in := e.intensive(1)
	p := e.buy(in.ID(), "student-1")
	e.clk.Advance(16 * time.Minute)
	require.Equal(t, sfn.StatusSucceeded, e.finish(e.startSaga(p)).Status)
	got := e.purchase(p.ID())
	require.Equal(t, []purchase.Status{purchase.StatusReserved, purchase.StatusExpired}, statuses(got))
	require.Contains(t, got.Note(), "HoldExpired")
	require.Empty(t, got.PaymentID(), "no payment was requested")
	require.Equal(t, [3]int{1, 0, 0}, e.seats(in.ID()))
}

func mustList(t *testing.T, e *env) []sfn.Execution {
	t.Helper()
	xs, err := e.sfn.ListExecutions(e.ctx, e.machine, "")
	require.NoError(t, err)
	return xs
}

func mustExecutionInput(t *testing.T, e *env, arn string) string {
	t.Helper()
	x, err := e.sfn.DescribeExecution(e.ctx, arn)
	require.NoError(t, err)
	return x.Input
}

// The Lambda platform fails steps on the way (a client timeout of the
// payment request's invocation, a sandbox killed while granting, a killed
// wait): each is retried, as AWS recommends for Lambda tasks, and the
// purchase is confirmed; nothing goes to a person.
func TestSagaRetriesLambdaPlatformFailures(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.failStep(string(StepRequestPayment), clientTimeout(), killed())
	e.failStep(string(StepAwaitPayment), killed())
	e.failStep(string(StepGrant), killed(), clientTimeout())
	in := e.intensive(1)
	p := e.buy(in.ID(), "student-1")
	arn := e.startSaga(p)

	// Time moves a second at a time (each retry waits at most a few), far
	// from the 15-minute hold deadline.
	var waiting purchase.Purchase
	e.tick("the saga to wait for the payment", func() bool {
		waiting = e.purchase(p.ID())
		return waiting.Status() == purchase.StatusPaymentPending && waiting.TaskToken() != ""
	})
	_, err := e.sb.SettlePayment(waiting.PaymentID(), sandbox.StatusSucceeded)
	require.NoError(t, err)
	e.tick("the purchase to be confirmed", func() bool { return e.purchase(p.ID()).Status() == purchase.StatusConfirmed })
	x := e.finish(arn)
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+" "+x.Cause)
	got := e.purchase(p.ID())
	require.Equal(t, purchase.StatusConfirmed, got.Status())
	require.Equal(t, []purchase.Status{purchase.StatusReserved, purchase.StatusPaymentPending, purchase.StatusConfirmed}, statuses(got))
	// The endpoint records a delivery after its handling, which the saga
	// may have acted on already.
	e.waitFor("the webhook's delivery", func() bool { return len(e.outcomes(purchase.EventPaymentSucceeded)) == 1 })
	require.Equal(t, []purchase.WebhookOutcome{purchase.OutcomeCallbackSent}, e.outcomes(purchase.EventPaymentSucceeded))
	require.Equal(t, [3]int{0, 0, 1}, e.seats(in.ID()))
	require.Equal(t, 3, e.stepInvocations(string(StepRequestPayment)), "two platform failures, then the request")
	require.Equal(t, 2, e.stepInvocations(string(StepAwaitPayment)))
	require.Equal(t, 3, e.stepInvocations(string(StepGrant)))
	require.Len(t, e.sb.Payments(p.ID()), 1, "one payment at the provider")
}

// The provider does not answer the request for a payment for three
// minutes right after the purchase (15-minute hold): the purchase shows
// awaiting_provider and keeps its seat the whole time, never expired; when
// the provider answers, the saga has the one payment the provider made for
// the reference (every attempt sent pay-<id>), and paying confirms it.
func TestSagaProviderSilentAtPaymentRequestKeepsTheHold(t *testing.T) {
	t.Parallel()
	e := setup(t)
	require.NoError(t, e.sb.SetFaults(sandbox.Faults{Mode: sandbox.FaultNoResponse}))
	in := e.intensive(1)
	p := e.buy(in.ID(), "student-1")
	arn := e.startSaga(p)

	outageEnds := start.Add(3 * time.Minute)
	sawWaiting := false
	e.tick("three minutes of silence", func() bool {
		got := e.purchase(p.ID())
		require.Contains(t, []purchase.Status{purchase.StatusReserved, purchase.StatusAwaitingProvider}, got.Status(),
			"at %s", e.clk.Now().Format(time.TimeOnly))
		require.Equal(t, [3]int{0, 1, 0}, e.seats(in.ID()), "the seat stays held")
		if got.Status() == purchase.StatusAwaitingProvider {
			sawWaiting = true
			require.Contains(t, got.Note(), "waiting for the payment provider")
		}
		return !e.clk.Now().Before(outageEnds)
	})
	require.True(t, sawWaiting, "the purchase showed awaiting_provider")
	asked := e.stepInvocations(StepRequestPayment)
	require.Greater(t, asked, 3, "the saga kept asking")
	require.Less(t, asked, 30, "with backoff")

	require.NoError(t, e.sb.SetFaults(sandbox.Faults{Mode: sandbox.FaultNone}))
	var waiting purchase.Purchase
	e.tick("the provider's answer", func() bool {
		waiting = e.purchase(p.ID())
		return waiting.Status() == purchase.StatusPaymentPending && waiting.TaskToken() != ""
	})
	pays := e.sb.Payments(p.ID())
	require.Len(t, pays, 1, "one payment at the provider for the purchase")
	require.Equal(t, pays[0].PaymentID, waiting.PaymentID())
	require.Empty(t, waiting.Note(), "nothing left to explain")

	_, err := e.sb.SettlePayment(waiting.PaymentID(), sandbox.StatusSucceeded)
	require.NoError(t, err)
	e.tick("the purchase to be confirmed", func() bool { return e.purchase(p.ID()).Status() == purchase.StatusConfirmed })
	x := e.finish(arn)
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+" "+x.Cause)
	got := e.purchase(p.ID())
	require.Equal(t, []purchase.Status{
		purchase.StatusReserved, purchase.StatusAwaitingProvider, purchase.StatusPaymentPending, purchase.StatusConfirmed,
	}, statuses(got))
	require.Equal(t, [3]int{0, 0, 1}, e.seats(in.ID()))
}

// The provider never answers: the saga asks until a tenth of the hold
// before the deadline, then expires the purchase (no checkout URL was ever
// shown) and the seat is free again. A payment made anyway is a late
// payment: refunded once, no seat.
func TestSagaProviderNeverAnswersExpiresAtTheCutoff(t *testing.T) {
	t.Parallel()
	e := setup(t)
	require.NoError(t, e.sb.SetFaults(sandbox.Faults{Mode: sandbox.FaultNoResponse}))
	e.autoAdvance()
	in := e.intensive(1)
	p := e.buy(in.ID(), "student-1")
	x := e.finish(e.startSaga(p))
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+" "+x.Cause)

	got := e.purchase(p.ID())
	require.Equal(t, []purchase.Status{purchase.StatusReserved, purchase.StatusAwaitingProvider, purchase.StatusExpired}, statuses(got))
	expiredAt := at(t, got, purchase.StatusExpired)
	require.False(t, expiredAt.Before(got.PaymentRequestCutoff()), "not before the cutoff")
	require.True(t, expiredAt.Before(got.HoldExpiresAt()), "released before the deadline it promised")
	require.Equal(t, p.HoldExpiresAt().Add(-90*time.Second), got.PaymentRequestCutoff(), "a tenth of the 15-minute hold")
	require.Contains(t, got.Note(), "did not answer")
	require.Empty(t, got.CheckoutURL(), "no checkout URL was ever shown")
	require.Equal(t, [3]int{1, 0, 0}, e.seats(in.ID()))
	// Backoff doubling from 2 s, capped at 30 s, over 13.5 minutes.
	asked := e.stepInvocations(StepRequestPayment)
	require.Greater(t, asked, 20)
	require.Less(t, asked, 60)
	sent := e.provider.sentPaymentRequests()
	require.NotEmpty(t, sent)
	last := sent[len(sent)-1]
	require.True(t, last.Before(got.PaymentRequestCutoff()), "no request at or past the cutoff: the last at %s", last)
	require.Greater(t, last, got.PaymentRequestCutoff().Add(-31*time.Second), "asked until the cutoff, not long before")

	pays := e.sb.Payments(p.ID())
	require.Len(t, pays, 1, "the silent provider made one payment for every request")
	require.NoError(t, e.sb.SetFaults(sandbox.Faults{Mode: sandbox.FaultNone}))
	e.stopAuto()
	e.latePayment(purchase.FromSnapshot(func() purchase.Snapshot { s := got.Snapshot(); s.PaymentID = pays[0].PaymentID; return s }()))
	e.autoAdvance()
	rx := e.finish(e.executionARN(purchase.RefundExecutionName(p.ID())))
	require.Equal(t, sfn.StatusSucceeded, rx.Status, rx.Error+" "+rx.Cause)
	require.Equal(t, purchase.StatusRefunded, e.purchase(p.ID()).Status())
	require.Len(t, e.sb.Refunds(pays[0].PaymentID), 1)
	require.Equal(t, [3]int{1, 0, 0}, e.seats(in.ID()), "a late payment never adds a seat")
}

// The silent provider did make the payment, and a payment.succeeded webhook
// for it arrives while the saga still waits for an answer: at the cutoff
// the saga does not expire the purchase (money came while the seat was
// held) but grants access.
func TestSagaPaidWhileProviderSilentIsGranted(t *testing.T) {
	t.Parallel()
	e := setup(t)
	require.NoError(t, e.sb.SetFaults(sandbox.Faults{Mode: sandbox.FaultNoResponse}))
	in := e.intensive(1)
	p := e.buy(in.ID(), "student-1")
	arn := e.startSaga(p)
	e.tick("the purchase to wait for the provider", func() bool {
		return e.purchase(p.ID()).Status() == purchase.StatusAwaitingProvider
	})
	pays := e.sb.Payments(p.ID())
	require.Len(t, pays, 1)
	e.frozen(func() {
		_, err := e.sb.SettlePayment(pays[0].PaymentID, sandbox.StatusSucceeded)
		require.NoError(t, err)
		e.waitFor("the webhook", func() bool { return len(e.outcomes(purchase.EventPaymentSucceeded)) == 1 })
	})
	got := e.purchase(p.ID())
	require.Equal(t, purchase.StatusAwaitingProvider, got.Status(), "the webhook records, the saga decides")
	require.Equal(t, purchase.ProviderSucceeded, got.PaymentStatus())

	e.autoAdvance()
	x := e.finish(arn)
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+" "+x.Cause)
	got = e.purchase(p.ID())
	require.Equal(t, purchase.StatusConfirmed, got.Status())
	require.Equal(t, []purchase.Status{purchase.StatusReserved, purchase.StatusAwaitingProvider, purchase.StatusConfirmed}, statuses(got))
	require.Equal(t, [3]int{0, 0, 1}, e.seats(in.ID()))
	require.Zero(t, e.provider.createRefund.Load())
}
