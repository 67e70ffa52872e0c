package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
)

// The operator's side of the saga: clubctl, built from this module, run
// against the stack's stack file like a person at a terminal.

// clubctl runs the built cmd/clubctl (clubctlBinary) with args and the
// stack's stack file, returning its exit status, standard output and error.
func clubctl(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	bin, err := clubctlBinary()
	require.NoError(t, err)
	require.NotEmpty(t, stack.path, "the stack file's path")
	cmd := exec.Command(bin, append(args, "--stack-file", stack.path)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run clubctl: %v", err)
	}
	return code, out.String(), errOut.String()
}

// storedPurchase is the purchase row as the club table holds it, with what
// a person's decision adds to its history.
type storedPurchase struct {
	Status        string `dynamodbav:"status"`
	PaymentStatus string `dynamodbav:"payment_status"`
	Note          string `dynamodbav:"note"`
	History       []struct {
		Status string `dynamodbav:"status"`
		By     string `dynamodbav:"by"`
		Reason string `dynamodbav:"reason"`
	} `dynamodbav:"history"`
}

func (p storedPurchase) statuses() []string {
	var out []string
	for _, h := range p.History {
		out = append(out, h.Status)
	}
	return out
}

func storedPurchaseOf(t *testing.T, id string) storedPurchase {
	t.Helper()
	item := storedItem(t, "PURCHASE#"+id, "PURCHASE")
	require.NotEmpty(t, item, "purchase %s", id)
	var p storedPurchase
	require.NoError(t, attributevalue.UnmarshalMap(item, &p))
	return p
}

// storedItem reads an item of the club table consistently (nil if there is
// none): what the tables hold, not what an API's read of them shows.
func storedItem(t *testing.T, pk, sk string) map[string]ddbtypes.AttributeValue {
	t.Helper()
	got, err := dynamodb.NewFromConfig(stack.aws).GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(stack.file.Tables["ClubTable"]),
		Key: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: pk}, "sk": &ddbtypes.AttributeValueMemberS{Value: sk},
		},
		ConsistentRead: aws.Bool(true),
	})
	require.NoError(t, err)
	return got.Item
}

// handOver does what the saga does when it runs out of bounded attempts
// without a definite answer: its needs_reconciliation step, through the
// task function. The seat stays held.
func handOver(t *testing.T, purchaseID string) {
	t.Helper()
	name := stack.file.Functions["PurchaseTasksFunction"]
	require.NotEmpty(t, name, "the stack has the purchase task function")
	payload, err := json.Marshal(map[string]any{
		"step": "needs_reconciliation", "purchase_id": purchaseID,
		"error": map[string]string{"Error": "PaymentUnknown", "Cause": "the provider did not answer"},
	})
	require.NoError(t, err)
	out, err := lambda.NewFromConfig(stack.aws).Invoke(context.Background(), &lambda.InvokeInput{FunctionName: aws.String(name), Payload: payload})
	require.NoError(t, err)
	require.Nil(t, out.FunctionError, "%s", out.Payload)
	require.Equal(t, "needs_reconciliation", storedPurchaseOf(t, purchaseID).Status)
}

func seatsNow(t *testing.T, u user, intensiveID string) [3]int {
	t.Helper()
	taken, held, left := intensiveSeats(t, u, intensiveID)
	return [3]int{taken, held, left}
}

// TestReconcileResolveEveryAction: four purchases the saga handed to a
// person, each closed with clubctl reconcile resolve, the built binary:
// the right status, seats and history for confirm, release and refund; an
// action the provider's recorded answer contradicts refused (exit 3) and
// changing nothing, unless forced; a decision on a purchase that no longer
// needs one refused.
func TestReconcileResolveEveryAction(t *testing.T) {
	// Parallel: its purchases need the payment sandbox without faults,
	// which it shares; the mail it owes nobody.
	t.Parallel()
	sharePaymentProvider(t)
	intensiveID := newIntensive(t, 4, 300)
	students := []user{newUser(t, "student"), newUser(t, "student"), newUser(t, "student"), newUser(t, "student")}
	ids := make([]string, 4)
	payments := make([]string, 4)
	for i, s := range students {
		ids[i], payments[i] = startPurchase(t, s, intensiveID)
		handOver(t, ids[i])
	}
	// The provider's answer for two of them arrives after the hand-over:
	// the students paid. The webhook records it and leaves the status to
	// the person.
	for _, i := range []int{1, 2} {
		settlePayment(t, payments[i], "succeed")
		eventually(t, 30*time.Second, "the payment recorded on "+ids[i], func() bool {
			return storedPurchaseOf(t, ids[i]).PaymentStatus == "succeeded"
		})
		require.Equal(t, "needs_reconciliation", storedPurchaseOf(t, ids[i]).Status)
	}
	require.Equal(t, [3]int{0, 4, 0}, seatsNow(t, students[0], intensiveID), "every hold kept while a person decides")

	code, stdout, _ := clubctl(t, "reconcile", "--status", "needs_reconciliation", "--json")
	require.Equal(t, 0, code)
	for _, id := range ids {
		require.Contains(t, stdout, id, "the list shows every purchase to decide")
	}

	// 0: no money moved (the payment is pending): confirm is refused, release frees the seat.
	code, _, stderr := clubctl(t, "reconcile", "resolve", ids[0], "--action", "confirm", "--reason", "ticket 100", "--by", "ops-ann")
	require.Equal(t, 3, code, stderr)
	require.Contains(t, stderr, "recorded payment status is pending")
	require.Equal(t, "needs_reconciliation", storedPurchaseOf(t, ids[0]).Status, "a refusal changes nothing")
	require.Equal(t, [3]int{0, 4, 0}, seatsNow(t, students[0], intensiveID))
	code, stdout, stderr = clubctl(t, "reconcile", "resolve", ids[0], "--action", "release", "--reason", "no payment at the provider, ticket 100", "--by", "ops-ann")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "is expired")
	require.Equal(t, [3]int{0, 3, 1}, seatsNow(t, students[0], intensiveID), "release frees the hold")
	p := storedPurchaseOf(t, ids[0])
	require.Equal(t, []string{"reserved", "payment_pending", "needs_reconciliation", "expired"}, p.statuses())
	last := p.History[len(p.History)-1]
	require.Equal(t, "ops-ann", last.By)
	require.Equal(t, "no payment at the provider, ticket 100", last.Reason)
	require.Equal(t, "expired", getPurchase(t, students[0], ids[0]).status(), "the student sees it")
	code, _, stderr = clubctl(t, "reconcile", "resolve", ids[0], "--action", "release", "--reason", "no payment at the provider, ticket 100", "--by", "ops-ann")
	require.Equal(t, 0, code, "the same decision again: %s", stderr)
	require.Len(t, storedPurchaseOf(t, ids[0]).History, 4, "and nothing written")
	code, _, stderr = clubctl(t, "reconcile", "resolve", ids[0], "--action", "confirm", "--reason", "changed my mind", "--by", "ops-ann", "--force")
	require.Equal(t, 3, code)
	require.Contains(t, stderr, "does not need reconciliation")

	// 1: paid: release is refused (money was taken), confirm grants the seat.
	code, _, stderr = clubctl(t, "reconcile", "resolve", ids[1], "--action", "release", "--reason", "ticket 101", "--by", "ops-bo")
	require.Equal(t, 3, code, stderr)
	require.Contains(t, stderr, "succeeded")
	require.Equal(t, [3]int{0, 3, 1}, seatsNow(t, students[1], intensiveID))
	code, _, stderr = clubctl(t, "reconcile", "resolve", ids[1], "--action", "confirm", "--reason", "paid, ticket 101", "--by", "ops-bo")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, [3]int{1, 2, 1}, seatsNow(t, students[1], intensiveID), "confirm takes the held seat")
	require.Equal(t, "confirmed", getPurchase(t, students[1], ids[1]).status())
	require.Equal(t, []string{"reserved", "payment_pending", "needs_reconciliation", "confirmed"}, storedPurchaseOf(t, ids[1]).statuses())

	// 2: paid, but the person refunds: the seat is freed and the refund
	// execution started from the outbox refunds once.
	code, stdout, stderr = clubctl(t, "reconcile", "resolve", ids[2], "--action", "refund", "--reason", "student asked to cancel, ticket 102", "--by", "ops-cy", "--json")
	require.Equal(t, 0, code, stderr)
	var res struct {
		Status          string `json:"status"`
		RefundExecution string `json:"refund_execution"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
	require.Equal(t, "refund_pending", res.Status)
	require.Equal(t, ids[2]+"-refund", res.RefundExecution)
	require.Equal(t, [3]int{1, 1, 2}, seatsNow(t, students[2], intensiveID), "refund frees the hold")
	// The refund has its owner: the listing asks Step Functions about
	// <id>-refund and shows nothing for a refund being carried out.
	code, stdout, stderr = clubctl(t, "reconcile", "--status", "refund_pending", "--json")
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, stdout, ids[2])
	awaitPurchase(t, students[2], ids[2], "refunded", time.Now().Add(60*time.Second))
	require.Equal(t, "SUCCEEDED", executionStatus(t, ids[2]+"-refund"))
	refunds := refundsOf(t, payments[2])
	require.Len(t, refunds, 1, "one refund")
	require.Equal(t, "succeeded", refunds[0]["status"])
	require.Equal(t, []string{"reserved", "payment_pending", "needs_reconciliation", "refund_pending", "refunded"}, storedPurchaseOf(t, ids[2]).statuses())

	// 3: pending, and the person confirms anyway (they saw the money at the
	// provider): refused without --force, done with it.
	code, _, _ = clubctl(t, "reconcile", "resolve", ids[3], "--action", "confirm", "--reason", "seen in provider dashboard", "--by", "ops-dee")
	require.Equal(t, 3, code)
	code, stdout, stderr = clubctl(t, "reconcile", "resolve", ids[3], "--action", "confirm", "--reason", "seen in provider dashboard", "--by", "ops-dee", "--force")
	require.Equal(t, 0, code, stderr)
	require.True(t, strings.Contains(stdout, "forced"), stdout)
	require.Equal(t, [3]int{2, 0, 2}, seatsNow(t, students[3], intensiveID))
	require.Equal(t, "confirmed", getPurchase(t, students[3], ids[3]).status())
	require.Empty(t, refundsOf(t, payments[0]))
	require.Empty(t, refundsOf(t, payments[1]))
}

// TestFailedRefundIsRefundedOnAPersonsDecision (issue 34): the provider
// fails a late payment's refund (once, then twice in a row). Each failure
// leaves the purchase in needs_reconciliation, listed with the next step;
// clubctl reconcile resolve --action refund asks the provider again under
// the next key, until the money is back: refunded, exactly one succeeded
// refund at the provider, every attempt on the purchase, seats unchanged.
func TestFailedRefundIsRefundedOnAPersonsDecision(t *testing.T) {
	// Parallel: both late payments' holds expire together, beside the other
	// long waits, while the test shares the payment sandbox without faults
	// (the saga asks it for the payments); then it owns the sandbox, whose
	// refunds wait for the test to settle them.
	t.Parallel()
	type latePayment struct {
		failures                           int
		student                            user
		intensiveID, purchaseID, paymentID string
		seats                              [3]int
	}
	cases := []*latePayment{{failures: 1}, {failures: 2}}
	releaseProvider := sharePaymentProvider(t)
	for _, c := range cases {
		// A 20 s hold: the saga asks for the payment before its 18 s
		// cutoff, also on a busy machine.
		c.intensiveID = newIntensive(t, 1, 20)
		c.student = newUser(t, "student")
		c.purchaseID, c.paymentID = startPurchase(t, c.student, c.intensiveID)
	}
	for _, c := range cases {
		awaitPurchase(t, c.student, c.purchaseID, "expired", patience.Deadline())
		c.seats = seatsNow(t, c.student, c.intensiveID)
		require.Equal(t, [3]int{0, 0, 1}, c.seats, "the hold expired: the seat is free")
	}
	releaseProvider()

	ownPaymentProvider(t)
	for _, c := range cases {
		failures, student, intensiveID, purchaseID, paymentID, seats := c.failures, c.student, c.intensiveID, c.purchaseID, c.paymentID, c.seats
		t.Run(fmt.Sprintf("%d failed", failures), func(t *testing.T) {
			setPaymentFaults(t, map[string]any{"mode": "hold_refunds"}) // refunds wait for the test to settle them
			settlePayment(t, paymentID, "succeed")                      // late: the webhook records the refund intent

			for n := 1; n <= failures+1; n++ {
				if n == failures+1 {
					// The provider recovers: the last refund succeeds by itself.
					sandbox(t, paymentSandbox(t), http.MethodPost, "/_sandbox/faults", map[string]any{"mode": "none"})
				}
				if n > 1 {
					code, stdout, stderr := clubctl(t, "reconcile", "resolve", purchaseID, "--action", "refund",
						"--reason", fmt.Sprintf("refund %d failed at the provider, ticket 34", n-1), "--by", "ops-ann", "--json")
					require.Equal(t, 0, code, stderr)
					var res struct {
						Status          string `json:"status"`
						RefundExecution string `json:"refund_execution"`
						RefundKey       string `json:"refund_key"`
					}
					require.NoError(t, json.Unmarshal([]byte(stdout), &res), stdout)
					require.Equal(t, "refund_pending", res.Status)
					require.Equal(t, fmt.Sprintf("%s-refund-%d", purchaseID, n), res.RefundExecution)
					require.Equal(t, fmt.Sprintf("refund-%s-%d", purchaseID, n), res.RefundKey, "a new key for a new attempt")
				}
				if n == failures+1 {
					break
				}
				var refundID string
				eventually(t, patience.Wait(), fmt.Sprintf("refund %d at the provider", n), func() bool {
					refunds := refundsOf(t, paymentID)
					if len(refunds) < n {
						return false
					}
					refundID, _ = refunds[n-1]["refund_id"].(string)
					return true
				})
				sandbox(t, paymentSandbox(t), http.MethodPost, "/_sandbox/refunds/"+url.PathEscape(refundID)+"/fail", nil)
				eventually(t, patience.Wait(), "the failed refund handed to a person", func() bool {
					return storedPurchaseOf(t, purchaseID).Status == "needs_reconciliation"
				})
				code, stdout, stderr := clubctl(t, "reconcile", "--status", "needs_reconciliation", "--json")
				require.Equal(t, 0, code, stderr)
				require.Contains(t, stdout, fmt.Sprintf("refund %s (key refund-%s-%d) failed at the provider: refund again, with key refund-%s-%d",
					refundID, purchaseID, n, purchaseID, n+1), "the listing says what to do")
				// Release and confirm are refused: the seat went back when the refund began.
				for _, action := range []string{"release", "confirm"} {
					code, _, stderr = clubctl(t, "reconcile", "resolve", purchaseID, "--action", action, "--reason", "wrong", "--by", "ops-ann", "--force")
					require.Equal(t, 3, code, stderr)
				}
			}

			p := awaitPurchase(t, student, purchaseID, "refunded", patience.Deadline())
			refunds := refundsOf(t, paymentID)
			require.Len(t, refunds, failures+1, "one refund per attempt")
			succeeded := 0
			for i, r := range refunds {
				if r["status"] == "succeeded" {
					succeeded++
					require.Equal(t, failures, i, "the last one")
				}
			}
			require.Equal(t, 1, succeeded, "exactly one refund succeeded at the provider")
			attempts, _ := p.body["refunds"].([]any)
			require.Len(t, attempts, failures+1, "the student sees every attempt: %s", p.raw)
			for i, a := range attempts {
				want := "failed"
				if i == failures {
					want = "succeeded"
				}
				require.Equal(t, want, a.(map[string]any)["status"], string(p.raw))
				require.Equal(t, refunds[i]["refund_id"], a.(map[string]any)["refund_id"])
			}
			require.Equal(t, seats, seatsNow(t, student, intensiveID), "seats unchanged")
			require.Equal(t, "SUCCEEDED", executionStatus(t, fmt.Sprintf("%s-refund-%d", purchaseID, failures+1)))
		})
	}
}
