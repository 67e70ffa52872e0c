package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
)

// The purchase saga end to end (docs/purchase-saga.md): the API holds the
// seat, the relay starts the execution, the task function asks the payment
// sandbox for a payment, the sandbox (standing in for the student at the
// checkout page) settles it and signs a webhook, and the API hands it to
// the saga.

// newIntensive creates a paid intensive as a new teacher.
func newIntensive(t *testing.T, capacity, holdSeconds int) string {
	t.Helper()
	teacher := newUser(t, "teacher")
	r := call(t, teacher, http.MethodPost, "/intensives", map[string]any{
		"title": "Sagas in practice", "capacity": capacity,
		"price": map[string]any{"amount_cents": 4900, "currency": "EUR"}, "hold_seconds": holdSeconds,
	})
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	return r.str("intensive_id")
}

func buy(t *testing.T, student user, intensiveID, key string) response {
	t.Helper()
	return call(t, student, http.MethodPost, "/intensives/"+intensiveID+"/purchases", nil, "Idempotency-Key", key)
}

// intensiveSeats returns seats_taken, seats_held and seats_left.
func intensiveSeats(t *testing.T, u user, intensiveID string) (taken, held, left int) {
	t.Helper()
	r := call(t, u, http.MethodGet, "/intensives/"+intensiveID, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	num := func(k string) int { n, _ := r.body[k].(float64); return int(n) }
	return num("seats_taken"), num("seats_held"), num("seats_left")
}

// purchaseView is GET /purchases/{id} as the student sees it.
type purchaseView struct {
	response
}

func (p purchaseView) status() string { return p.str("status") }

func (p purchaseView) paymentID() string {
	pay, _ := p.body["payment"].(map[string]any)
	id, _ := pay["payment_id"].(string)
	return id
}

// history returns the statuses the purchase went through and when.
func (p purchaseView) history(t *testing.T) ([]string, []time.Time) {
	t.Helper()
	var statuses []string
	var ats []time.Time
	list, _ := p.body["history"].([]any)
	for _, e := range list {
		m := e.(map[string]any)
		at, err := time.Parse(time.RFC3339Nano, m["at"].(string))
		require.NoError(t, err)
		statuses = append(statuses, m["status"].(string))
		ats = append(ats, at)
	}
	return statuses, ats
}

func getPurchase(t *testing.T, student user, purchaseID string) purchaseView {
	t.Helper()
	r := call(t, student, http.MethodGet, "/purchases/"+purchaseID, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	return purchaseView{r}
}

// awaitPurchase polls the purchase until it is in status want or the
// deadline passes; a purchase that reaches another final status first
// fails at once.
func awaitPurchase(t *testing.T, student user, purchaseID, want string, deadline time.Time) purchaseView {
	t.Helper()
	for {
		p := getPurchase(t, student, purchaseID)
		switch s := p.status(); {
		case s == want:
			return p
		case s != want && (s == "confirmed" || s == "refunded" || s == "needs_reconciliation"):
			t.Fatalf("purchase %s is %s, waiting for %s: %s", purchaseID, s, want, p.raw)
		case time.Now().After(deadline):
			t.Fatalf("purchase %s not %s by %s: %s", purchaseID, want, deadline.Format(time.RFC3339), p.raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startPurchase buys a seat and waits until the saga has the provider's
// payment (payment_pending), returning the purchase id and payment id.
func startPurchase(t *testing.T, student user, intensiveID string) (purchaseID, paymentID string) {
	t.Helper()
	r := buy(t, student, intensiveID, id("key"))
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	purchaseID = r.str("purchase_id")
	p := awaitPurchase(t, student, purchaseID, "payment_pending", patience.Deadline())
	require.NotEmpty(t, p.paymentID())
	return purchaseID, p.paymentID()
}

// paymentSandbox is the payment sandbox's base URL; the purchase tests
// play the student at its checkout page.
func paymentSandbox(t *testing.T) string {
	t.Helper()
	require.NotEmpty(t, stack.file.PaymentURL, "this stack has no payment sandbox (payment_url in the stack file)")
	return stack.file.PaymentURL
}

// settlePayment plays the student at the checkout page: the sandbox
// settles the payment ("succeed" or "fail") and sends the signed webhook.
func settlePayment(t *testing.T, paymentID, outcome string) {
	t.Helper()
	sandbox(t, paymentSandbox(t), http.MethodPost, "/_sandbox/payments/"+url.PathEscape(paymentID)+"/"+outcome, nil)
}

// paymentProvider is the payment sandbox's fault mode, one switch for the
// whole stack. The sequential tests run before any parallel one, so only
// the parallel tests take it: those that switch faults on hold it alone
// (ownPaymentProvider), those whose purchases need a provider without
// faults share it (sharePaymentProvider). The long waits of both kinds
// (holds that expire, a provider silent for a while) then overlap the
// other parallel tests' instead of adding to the suite's time.
//
// It lets a test share the sandbox whenever no test owns it, also while
// another test waits to own it: the sharers' holds then expire together,
// and the owners take turns after them. A sync.RWMutex would not: a
// waiting Lock blocks every later RLock, which ran a sharer's 20 s hold
// after an owner's 20 s silence instead of beside another sharer's.
var paymentProvider struct {
	sync.Mutex
	changed *sync.Cond
	owned   bool
	sharers int
}

func init() { paymentProvider.changed = sync.NewCond(&paymentProvider.Mutex) }

// ownPaymentProvider gives a parallel test that switches the payment
// sandbox's faults the sandbox to itself until it ends.
func ownPaymentProvider(t *testing.T) {
	t.Helper()
	p := &paymentProvider
	p.Lock()
	for p.owned || p.sharers > 0 {
		p.changed.Wait()
	}
	p.owned = true
	p.Unlock()
	t.Cleanup(func() {
		p.Lock()
		p.owned = false
		p.changed.Broadcast()
		p.Unlock()
	})
}

// sharePaymentProvider keeps the payment sandbox without faults while a
// parallel test's purchases need it so: until the test ends, or until it
// calls the function returned, if sooner.
func sharePaymentProvider(t *testing.T) (release func()) {
	t.Helper()
	p := &paymentProvider
	p.Lock()
	for p.owned {
		p.changed.Wait()
	}
	p.sharers++
	p.Unlock()
	release = sync.OnceFunc(func() {
		p.Lock()
		p.sharers--
		p.changed.Broadcast()
		p.Unlock()
	})
	t.Cleanup(release)
	return release
}

// setPaymentFaults switches the payment sandbox's fault mode for the rest
// of the test. A parallel test calls ownPaymentProvider first.
func setPaymentFaults(t *testing.T, faults map[string]any) {
	t.Helper()
	sandbox(t, paymentSandbox(t), http.MethodPost, "/_sandbox/faults", faults)
	t.Cleanup(func() {
		sandbox(t, paymentSandbox(t), http.MethodPost, "/_sandbox/faults", map[string]any{"mode": "none"})
	})
}

// webhookDeliveries returns, for the sandbox's events about paymentID, how
// many deliveries of each event type the API answered 2xx.
func webhookDeliveries(t *testing.T, paymentID string) map[string]int {
	t.Helper()
	out := sandbox(t, paymentSandbox(t), http.MethodGet, "/_sandbox/events", nil)
	got := map[string]int{}
	list, _ := out["events"].([]any)
	for _, e := range list {
		rec := e.(map[string]any)
		ev := rec["event"].(map[string]any)
		if ev["payment_id"] == paymentID {
			n, _ := rec["delivered"].(float64)
			got[ev["type"].(string)] += int(n)
		}
	}
	return got
}

// refundsOf lists the provider's refunds of a payment.
func refundsOf(t *testing.T, paymentID string) []map[string]any {
	t.Helper()
	out := sandbox(t, paymentSandbox(t), http.MethodGet, "/v1/refunds?payment_id="+url.QueryEscape(paymentID), nil)
	var refunds []map[string]any
	list, _ := out["refunds"].([]any)
	for _, r := range list {
		refunds = append(refunds, r.(map[string]any))
	}
	return refunds
}

// executionStatus waits until the saga execution named name (a purchase
// id, or <id>-refund) has ended and returns its status. The business
// status on the purchase is written by a step before the execution reaches
// its final state, so an execution may still run for a moment (or, for a
// refund, until its next poll) after the purchase shows the outcome.
func executionStatus(t *testing.T, name string) string {
	t.Helper()
	machine := stack.file.Outputs["PurchaseStateMachineArn"]
	require.NotEmpty(t, machine, "the stack outputs PurchaseStateMachineArn")
	arn := strings.Replace(machine, ":stateMachine:", ":execution:", 1) + ":" + name
	client := sfn.NewFromConfig(stack.aws)
	var status string
	eventually(t, 30*time.Second, "execution "+name+" ended", func() bool {
		out, err := client.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
		require.NoError(t, err, "execution %s", name)
		status = string(out.Status)
		return status != "RUNNING"
	})
	return status
}

func TestPurchaseIsConfirmedWhenThePaymentSucceeds(t *testing.T) {
	intensiveID := newIntensive(t, 2, 300)
	student := newUser(t, "student")
	key := id("key")

	r := buy(t, student, intensiveID, key)
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	require.Equal(t, "reserved", r.str("status"), "accepted, not done: the seat is held")
	purchaseID := r.str("purchase_id")
	require.Equal(t, "/purchases/"+purchaseID, r.header.Get("Location"))
	holdExpiresAt, err := time.Parse(time.RFC3339Nano, r.str("hold_expires_at"))
	require.NoError(t, err)
	again := buy(t, student, intensiveID, key)
	require.Equal(t, http.StatusAccepted, again.status)
	require.JSONEq(t, string(r.raw), string(again.raw), "a retry is the same purchase")
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	_, held, _ := intensiveSeats(t, student, intensiveID)
	require.Equal(t, 1, held, "one hold for the two requests")

	p := awaitPurchase(t, student, purchaseID, "payment_pending", patience.Deadline())
	pay := p.body["payment"].(map[string]any)
	require.Equal(t, "pending", pay["status"])
	require.Contains(t, pay["checkout_url"], pay["payment_id"], "the student is sent to the provider's checkout page")

	settlePayment(t, p.paymentID(), "succeed")
	p = awaitPurchase(t, student, purchaseID, "confirmed", patience.Deadline())
	statuses, ats := p.history(t)
	require.Equal(t, []string{"reserved", "payment_pending", "confirmed"}, statuses)
	require.False(t, ats[2].After(holdExpiresAt), "confirmed while the seat was held")
	require.Equal(t, "succeeded", p.body["payment"].(map[string]any)["status"])
	taken, held, left := intensiveSeats(t, student, intensiveID)
	require.Equal(t, [3]int{1, 0, 1}, [3]int{taken, held, left}, "the held seat became a taken seat")

	require.Equal(t, "SUCCEEDED", executionStatus(t, purchaseID), "the execution is named after the purchase")
	require.Empty(t, refundsOf(t, p.paymentID()))
}

func TestIntensiveFullWhileEverySeatIsHeld(t *testing.T) {
	intensiveID := newIntensive(t, 1, 300)
	first, second := newUser(t, "student"), newUser(t, "student")
	r := buy(t, first, intensiveID, id("key"))
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))

	r = buy(t, second, intensiveID, id("key"))
	require.Equal(t, http.StatusConflict, r.status, string(r.raw))
	require.Equal(t, "intensive_full", r.errorCode(), "a held seat is not for sale")
	taken, held, left := intensiveSeats(t, second, intensiveID)
	require.Equal(t, [3]int{0, 1, 0}, [3]int{taken, held, left})
}

// TestHoldExpiresThenALatePaymentIsRefunded: nobody pays before the hold
// deadline, so the saga asks the provider (still pending) and expires the
// purchase, giving the seat back. Then the student pays anyway: the late
// payment is refunded with its own key, exactly once, and no seat appears.
func TestHoldExpiresThenALatePaymentIsRefunded(t *testing.T) {
	// Parallel: it waits out a hold, beside the other long waits.
	t.Parallel()
	sharePaymentProvider(t)
	// A 20 s hold: the first payment request must go out before the
	// cutoff (a tenth before the hold's end), also on a busy machine.
	intensiveID := newIntensive(t, 1, 20)
	student := newUser(t, "student")
	purchaseID, paymentID := startPurchase(t, student, intensiveID)
	deadline, err := time.Parse(time.RFC3339Nano, getPurchase(t, student, purchaseID).str("hold_expires_at"))
	require.NoError(t, err)

	p := awaitPurchase(t, student, purchaseID, "expired", deadline.Add(60*time.Second))
	statuses, ats := p.history(t)
	require.Equal(t, []string{"reserved", "payment_pending", "checking_payment", "expired"}, statuses,
		"no webhook by the deadline: the saga asked the provider, which said pending")
	require.False(t, ats[2].Before(deadline), "never checked before the deadline")
	taken, held, left := intensiveSeats(t, student, intensiveID)
	require.Equal(t, [3]int{0, 0, 1}, [3]int{taken, held, left}, "the seat is free again")

	settlePayment(t, paymentID, "succeed")
	p = awaitPurchase(t, student, purchaseID, "refunded", patience.Deadline())
	statuses, _ = p.history(t)
	require.Equal(t, []string{"reserved", "payment_pending", "checking_payment", "expired", "refund_pending", "refunded"}, statuses)
	refund, _ := p.body["refund"].(map[string]any)
	require.Equal(t, "succeeded", refund["status"], string(p.raw))

	refunds := refundsOf(t, paymentID)
	require.Len(t, refunds, 1, "one refund")
	require.Equal(t, refund["refund_id"], refunds[0]["refund_id"])
	require.Equal(t, "succeeded", refunds[0]["status"])
	taken, held, left = intensiveSeats(t, student, intensiveID)
	require.Equal(t, [3]int{0, 0, 1}, [3]int{taken, held, left}, "a late payment never adds a seat")
	require.Equal(t, "SUCCEEDED", executionStatus(t, purchaseID+"-refund"), "the refund ended cleanly")
}

// TestDuplicateWebhooksChangeNothing: the provider delivers every event
// twice; the purchase is confirmed once and the second delivery is
// answered 200 without effect.
func TestDuplicateWebhooksChangeNothing(t *testing.T) {
	setPaymentFaults(t, map[string]any{"mode": "duplicate_webhooks"})
	intensiveID := newIntensive(t, 3, 300)
	student := newUser(t, "student")
	purchaseID, paymentID := startPurchase(t, student, intensiveID)

	settlePayment(t, paymentID, "succeed")
	eventually(t, 20*time.Second, "both copies of payment.succeeded answered 2xx", func() bool {
		return webhookDeliveries(t, paymentID)["payment.succeeded"] == 2
	})
	p := awaitPurchase(t, student, purchaseID, "confirmed", patience.Deadline())
	statuses, _ := p.history(t)
	require.Equal(t, []string{"reserved", "payment_pending", "confirmed"}, statuses, "one transition per status")
	taken, held, left := intensiveSeats(t, student, intensiveID)
	require.Equal(t, [3]int{1, 0, 2}, [3]int{taken, held, left}, "one seat taken")
	require.Empty(t, refundsOf(t, paymentID))
	require.Equal(t, "SUCCEEDED", executionStatus(t, purchaseID))
}

// TestForgedWebhookIsRefused: a payment event without the provider's
// signature is 401 and changes nothing.
func TestForgedWebhookIsRefused(t *testing.T) {
	intensiveID := newIntensive(t, 1, 300)
	student := newUser(t, "student")
	purchaseID, paymentID := startPurchase(t, student, intensiveID)
	body := fmt.Sprintf(`{"event_id":"evt-forged","type":"payment.succeeded","payment_id":%q,"reference":%q,"amount_cents":4900}`, paymentID, purchaseID)

	for _, sig := range []string{"", "t=" + fmt.Sprint(time.Now().Unix()) + ",v1=" + strings.Repeat("ab", 32), "garbage"} {
		headers := []string{}
		if sig != "" {
			headers = append(headers, "X-Sandbox-Signature", sig)
		}
		r := call(t, user{}, http.MethodPost, "/webhooks/payments", body, headers...)
		require.Equal(t, http.StatusUnauthorized, r.status, string(r.raw))
		require.Equal(t, "invalid_signature", r.errorCode())
	}
	p := getPurchase(t, student, purchaseID)
	require.Equal(t, "payment_pending", p.status(), "the forged success changed nothing")
	require.Equal(t, "pending", p.body["payment"].(map[string]any)["status"])
	_, held, _ := intensiveSeats(t, student, intensiveID)
	require.Equal(t, 1, held)
}

// paymentsFor lists the payments the provider holds for a reference (the
// purchase id), from the sandbox's control API.
func paymentsFor(t *testing.T, reference string) []map[string]any {
	t.Helper()
	out := sandbox(t, paymentSandbox(t), http.MethodGet, "/_sandbox/payments?reference="+url.QueryEscape(reference), nil)
	var pays []map[string]any
	list, _ := out["payments"].([]any)
	for _, p := range list {
		pays = append(pays, p.(map[string]any))
	}
	return pays
}

// TestSilentProviderNeverCostsTheSeat: right after a purchase with the
// default 15-minute hold, the payment provider answers nothing for three
// minutes. Scaled by a tenth (a 90 s hold, an 18 s silence, a 1 s call
// timeout set by the harness): the purchase waits in awaiting_provider with
// its seat held, never expired; when the provider answers, the purchase has
// the one payment the provider made for it, and paying confirms it.
func TestSilentProviderNeverCostsTheSeat(t *testing.T) {
	// Parallel: it waits out the silence beside the other long waits,
	// owning the payment sandbox.
	t.Parallel()
	ownPaymentProvider(t)
	setPaymentFaults(t, map[string]any{"mode": "no_response"})
	intensiveID := newIntensive(t, 1, 90)
	student := newUser(t, "student")
	r := buy(t, student, intensiveID, id("key"))
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	purchaseID := r.str("purchase_id")

	silenceEnds := time.Now().Add(18 * time.Second) // patience:exempt how long the provider stays silent, not a deadline
	sawWaiting := false
	for time.Now().Before(silenceEnds) {
		p := getPurchase(t, student, purchaseID)
		require.Contains(t, []string{"reserved", "awaiting_provider"}, p.status(), "during the silence: %s", p.raw)
		sawWaiting = sawWaiting || p.status() == "awaiting_provider"
		taken, held, left := intensiveSeats(t, student, intensiveID)
		require.Equal(t, [3]int{0, 1, 0}, [3]int{taken, held, left}, "the seat stays held")
		time.Sleep(250 * time.Millisecond)
	}
	require.True(t, sawWaiting, "the purchase shows it waits for the provider")

	sandbox(t, paymentSandbox(t), http.MethodPost, "/_sandbox/faults", map[string]any{"mode": "none"})
	p := awaitPurchase(t, student, purchaseID, "payment_pending", patience.Deadline())
	pays := paymentsFor(t, purchaseID)
	require.Len(t, pays, 1, "the provider holds one payment for the purchase, whatever was retried")
	require.Equal(t, pays[0]["payment_id"], p.paymentID())
	require.NotEmpty(t, p.body["payment"].(map[string]any)["checkout_url"])

	settlePayment(t, p.paymentID(), "succeed")
	p = awaitPurchase(t, student, purchaseID, "confirmed", patience.Deadline())
	statuses, _ := p.history(t)
	require.Equal(t, []string{"reserved", "awaiting_provider", "payment_pending", "confirmed"}, statuses)
	taken, held, left := intensiveSeats(t, student, intensiveID)
	require.Equal(t, [3]int{1, 0, 0}, [3]int{taken, held, left})
	require.Equal(t, "SUCCEEDED", executionStatus(t, purchaseID))
	require.Len(t, paymentsFor(t, purchaseID), 1)
}
