package reliability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
)

// The saga's side of the suite: purchases driven through the HTTP API and
// the payment sandbox, facts read from the club table and the sandbox.

// purchaseRow is a purchase as the club table holds it.
type purchaseRow struct {
	PurchaseID   string `dynamodbav:"purchase_id"`
	IntensiveID  string `dynamodbav:"intensive_id"`
	Status       string `dynamodbav:"status"`
	PaymentID    string `dynamodbav:"payment_id"`
	RefundID     string `dynamodbav:"refund_id"`
	RefundStatus string `dynamodbav:"refund_status"`
	LatePayment  bool   `dynamodbav:"late_payment"`
	History      []struct {
		Status string `dynamodbav:"status"`
	} `dynamodbav:"history"`
	Version int64 `dynamodbav:"version"`
}

func (p purchaseRow) statuses() []string {
	var out []string
	for _, h := range p.History {
		out = append(out, h.Status)
	}
	return out
}

// seats are an intensive's three seat pools as the club table holds them.
type seats struct {
	Capacity int `dynamodbav:"capacity"`
	Free     int `dynamodbav:"seats_free"`
	Held     int `dynamodbav:"seats_held"`
	Taken    int `dynamodbav:"seats_taken"`
}

func (s seats) String() string {
	return fmt.Sprintf("free %d, held %d, taken %d of %d", s.Free, s.Held, s.Taken, s.Capacity)
}

func getItem(t *testing.T, pk, sk string, out any) {
	t.Helper()
	require.True(t, lookUp(t, pk, sk, out), "no item %s/%s", pk, sk)
}

// lookUp reads an item of the club table consistently into out and reports
// whether there was one.
func lookUp(t *testing.T, pk, sk string, out any) bool {
	t.Helper()
	got, err := stack.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(stack.file.Tables["ClubTable"]),
		Key: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: pk}, "sk": &ddbtypes.AttributeValueMemberS{Value: sk},
		},
		ConsistentRead: aws.Bool(true),
	})
	require.NoError(t, err)
	if len(got.Item) == 0 {
		return false
	}
	require.NoError(t, attributevalue.UnmarshalMap(got.Item, out))
	return true
}

func purchaseOf(t *testing.T, id string) purchaseRow {
	t.Helper()
	var p purchaseRow
	getItem(t, "PURCHASE#"+id, "PURCHASE", &p)
	return p
}

// seatsOf reads the pools and checks that they add up to the capacity.
func seatsOf(t *testing.T, intensiveID string) seats {
	t.Helper()
	var s seats
	getItem(t, "INTENSIVE#"+intensiveID, "INTENSIVE", &s)
	require.Equal(t, s.Capacity, s.Free+s.Held+s.Taken, "the seat pools add up to the capacity (%s)", s)
	return s
}

// awaitStatus waits until the purchase row is in status want; a purchase
// that ends in another final status fails at once.
func awaitStatus(t *testing.T, id, want string, within time.Duration) purchaseRow {
	t.Helper()
	var p purchaseRow
	eventually(t, within, fmt.Sprintf("purchase %s is %s", id, want), func() bool {
		p = purchaseOf(t, id)
		if p.Status != want && slices.Contains([]string{"confirmed", "refunded", "needs_reconciliation"}, p.Status) {
			t.Fatalf("purchase %s is %s, waiting for %s: history %v", id, p.Status, want, p.statuses())
		}
		return p.Status == want
	})
	return p
}

// paidIntensive creates a paid intensive as a new teacher.
func paidIntensive(t *testing.T, capacity, holdSeconds int) string {
	t.Helper()
	teacher := mustUser(t, "teacher")
	// Repeated on a server failure, as a client does; a create whose
	// answer was lost leaves an intensive nobody buys.
	r, err := repeatPost(context.Background(), teacher, "/intensives", map[string]any{
		"title": "Reliability", "capacity": capacity,
		"price": map[string]any{"amount_cents": 4900, "currency": "EUR"}, "hold_seconds": holdSeconds,
	}, "", true)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, r.status, string(r.raw))
	return r.str("intensive_id")
}

// sale is one student's purchase of a seat.
type sale struct {
	student     user
	intensiveID string
	purchaseID  string
	paymentID   string
	// repeated counts the failed answers (5xx, 429, none) the client's
	// purchase request repeated.
	repeated int
}

// view is the purchase as its student sees it (GET /purchases/{id}).
func (s sale) view(t *testing.T) response {
	t.Helper()
	r := call(t, s.student, http.MethodGet, "/purchases/"+s.purchaseID, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	return r
}

// settle plays the student at the checkout page: the sandbox settles the
// payment ("succeed" or "fail") and sends the signed webhook.
func settle(t *testing.T, paymentID, outcome string) {
	t.Helper()
	control(t, http.MethodPost, stack.file.PaymentURL+"/_sandbox/payments/"+url.PathEscape(paymentID)+"/"+outcome, nil, nil)
}

// setPaymentFaults switches the payment sandbox's fault mode until the
// test ends (or the next call).
func setPaymentFaults(t *testing.T, mode string) {
	t.Helper()
	control(t, http.MethodPost, stack.file.PaymentURL+"/_sandbox/faults", map[string]any{"mode": mode}, nil)
	t.Cleanup(func() {
		control(t, http.MethodPost, stack.file.PaymentURL+"/_sandbox/faults", map[string]any{"mode": "none"}, nil)
	})
}

// webhookEvent is one event the sandbox raised, with its deliveries.
type webhookEvent struct {
	EventID   string
	Type      string
	Delivered int
}

// webhookEvents lists the sandbox's events about a payment, oldest first.
func webhookEvents(t *testing.T, paymentID string) []webhookEvent {
	t.Helper()
	var out struct {
		Events []struct {
			Event struct {
				EventID   string `json:"event_id"`
				Type      string `json:"type"`
				PaymentID string `json:"payment_id"`
			} `json:"event"`
			Delivered int `json:"delivered"`
		} `json:"events"`
	}
	control(t, http.MethodGet, stack.file.PaymentURL+"/_sandbox/events", nil, &out)
	var evs []webhookEvent
	for _, e := range out.Events {
		if e.Event.PaymentID == paymentID {
			evs = append(evs, webhookEvent{EventID: e.Event.EventID, Type: e.Event.Type, Delivered: e.Delivered})
		}
	}
	return evs
}

// eventOf returns the payment's only event of a type.
func eventOf(t *testing.T, paymentID, typ string) webhookEvent {
	t.Helper()
	var found []webhookEvent
	for _, e := range webhookEvents(t, paymentID) {
		if e.Type == typ {
			found = append(found, e)
		}
	}
	require.Len(t, found, 1, "one %s event for payment %s", typ, paymentID)
	return found[0]
}

// resend makes the sandbox deliver an old event again, with its event_id.
func resend(t *testing.T, eventID string) {
	t.Helper()
	control(t, http.MethodPost, stack.file.PaymentURL+"/_sandbox/events/"+url.PathEscape(eventID)+"/resend", nil, nil)
}

// awaitDelivered waits until the API answered 2xx to n deliveries of an
// event.
func awaitDelivered(t *testing.T, paymentID, eventID string, n int) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("%d deliveries of %s answered 2xx", n, eventID), func() bool {
		for _, e := range webhookEvents(t, paymentID) {
			if e.EventID == eventID {
				return e.Delivered >= n
			}
		}
		return false
	})
}

// providerRefund is a refund the payment provider holds.
type providerRefund struct {
	RefundID string `json:"refund_id"`
	Status   string `json:"status"`
}

// refundsAt lists the provider's refunds of a payment. The refund
// endpoints answer 503 under refund_unavailable: call it with the fault off.
func refundsAt(t *testing.T, paymentID string) []providerRefund {
	t.Helper()
	var out struct {
		Refunds []providerRefund `json:"refunds"`
	}
	control(t, http.MethodGet, stack.file.PaymentURL+"/v1/refunds?payment_id="+url.QueryEscape(paymentID), nil, &out)
	return out.Refunds
}

// execution is a saga execution's end and the errors its tasks failed with.
type execution struct {
	status string
	errors []string
}

func executionARN(t *testing.T, name string) string {
	t.Helper()
	machine := stack.file.Outputs["PurchaseStateMachineArn"]
	require.NotEmpty(t, machine, "the stack outputs PurchaseStateMachineArn")
	return strings.Replace(machine, ":stateMachine:", ":execution:", 1) + ":" + name
}

// taskErrorsIfStarted lists, in order, the errors the execution's tasks
// failed with; ok is false while no execution of that name exists.
func taskErrorsIfStarted(t *testing.T, name string) (errs []string, ok bool) {
	t.Helper()
	client := sfn.NewFromConfig(stack.aws)
	p := sfn.NewGetExecutionHistoryPaginator(client, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(executionARN(t, name))})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		var missing *sfntypes.ExecutionDoesNotExist
		if errors.As(err, &missing) {
			return nil, false
		}
		require.NoError(t, err)
		for _, ev := range page.Events {
			switch {
			case ev.TaskFailedEventDetails != nil:
				errs = append(errs, aws.ToString(ev.TaskFailedEventDetails.Error))
			case ev.LambdaFunctionFailedEventDetails != nil:
				errs = append(errs, aws.ToString(ev.LambdaFunctionFailedEventDetails.Error))
			}
		}
	}
	return errs, true
}

// ended waits until the execution named name (a purchase id, or
// <id>-refund) has ended. The purchase shows its outcome before its
// execution reaches the final state.
func ended(t *testing.T, name string) execution {
	t.Helper()
	client := sfn.NewFromConfig(stack.aws)
	var e execution
	eventually(t, 60*time.Second, "execution "+name+" ended", func() bool {
		out, err := client.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(executionARN(t, name))})
		require.NoError(t, err, "execution %s", name)
		e.status = string(out.Status)
		return e.status != "RUNNING"
	})
	var ok bool
	e.errors, ok = taskErrorsIfStarted(t, name)
	require.True(t, ok)
	return e
}

// invokeStep runs one step of the task function by hand, as a re-run of an
// old handler does, and returns the error type it failed with ("" for
// success).
func invokeStep(t *testing.T, step, purchaseID string) string {
	t.Helper()
	payload, err := json.Marshal(map[string]string{"step": step, "purchase_id": purchaseID, "task_token": "an-old-token"})
	require.NoError(t, err)
	out, err := lambda.NewFromConfig(stack.aws).Invoke(context.Background(), &lambda.InvokeInput{
		FunctionName: aws.String(function(t, "PurchaseTasksFunction")), Payload: payload,
	})
	require.NoError(t, err)
	if out.FunctionError == nil {
		return ""
	}
	var fail struct {
		ErrorType string `json:"errorType"`
	}
	require.NoError(t, json.Unmarshal(out.Payload, &fail), "%s", out.Payload)
	return fail.ErrorType
}

// expiredAhead holds sales whose hold a test let expire for a later test
// (by name), bought with its own so that the holds expire together: the
// later test then finds its sale expired instead of waiting out a hold of
// its own. Run alone, the later test buys its sale itself.
var expiredAhead = struct {
	sync.Mutex
	sales map[string]sale
}{sales: map[string]sale{}}

// keepExpired leaves an expired sale for the test named name.
func keepExpired(name string, s sale) {
	expiredAhead.Lock()
	defer expiredAhead.Unlock()
	expiredAhead.sales[name] = s
}

// takeExpired returns the sale an earlier test left for the test named
// name, if one did.
func takeExpired(name string) (sale, bool) {
	expiredAhead.Lock()
	defer expiredAhead.Unlock()
	s, ok := expiredAhead.sales[name]
	delete(expiredAhead.sales, name)
	return s, ok
}

// buySeats buys one seat of each intensive, concurrently, and waits until
// the saga of each has asked the provider for the payment.
func buySeats(t *testing.T, intensiveIDs ...string) []sale {
	t.Helper()
	out := make([]sale, len(intensiveIDs))
	errs := make([]error, len(intensiveIDs))
	var wg sync.WaitGroup
	for i, in := range intensiveIDs {
		wg.Go(func() { out[i], errs[i] = buySeat(in) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	return out
}

// buySeat buys a seat as a new student and waits until the purchase has
// its payment. It runs on its own goroutine, so it returns its failure.
func buySeat(intensiveID string) (sale, error) {
	u, err := newUser("student", id("student"))
	if err != nil {
		return sale{}, err
	}
	s := sale{student: u, intensiveID: intensiveID}
	// A client repeats a failed request with the same key (the adversary's
	// lost answers and throttling can fail one).
	r, err := repeatPost(context.Background(), u, "/intensives/"+intensiveID+"/purchases", nil, id("key"), true)
	if err != nil {
		return s, err
	}
	s.repeated = len(r.answers)
	if r.status != http.StatusAccepted {
		return s, fmt.Errorf("buy a seat of %s: %d %s", intensiveID, r.status, r.raw)
	}
	s.purchaseID = r.str("purchase_id")
	for deadline := patience.Deadline(); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		v, err := do(context.Background(), u, http.MethodGet, "/purchases/"+s.purchaseID, nil)
		if err != nil {
			continue // a lost answer: read again
		}
		pay, _ := v.body["payment"].(map[string]any)
		if s.paymentID, _ = pay["payment_id"].(string); s.paymentID != "" {
			return s, nil
		}
	}
	return s, fmt.Errorf("purchase %s has no payment after 30s", s.purchaseID)
}

// occurrences counts how often s appears in list (a history, task errors).
func occurrences(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

// refundedOnce checks the money facts of a refunded late payment: the
// purchase went through refund_pending once to refunded, the provider
// holds exactly one refund, succeeded, and it is the one the purchase
// records.
func refundedOnce(t *testing.T, p purchaseRow) providerRefund {
	t.Helper()
	require.Equal(t, "refunded", p.Status)
	require.True(t, p.LatePayment)
	h := p.statuses()
	require.Equal(t, []string{"expired", "refund_pending", "refunded"}, h[len(h)-3:], "history %v", h)
	require.Equal(t, 1, occurrences(h, "refund_pending"), "one refund intent: %v", h)
	refunds := refundsAt(t, p.PaymentID)
	require.Len(t, refunds, 1, "at most one refund per payment")
	require.Equal(t, "succeeded", refunds[0].Status)
	require.Equal(t, p.RefundID, refunds[0].RefundID, "the purchase records the provider's refund")
	require.Equal(t, "succeeded", p.RefundStatus)
	return refunds[0]
}
