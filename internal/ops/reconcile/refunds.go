package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/purchase"
)

// Executions tells what became of a saga execution, by name; the clubctl
// adapter asks Step Functions.
type Executions interface {
	// Execution returns the status of the execution named name
	// ("RUNNING", "SUCCEEDED", "FAILED", …) and when it started, with
	// found false when no execution has that name.
	Execution(ctx context.Context, name string) (status string, started time.Time, found bool, err error)
}

// RefundStartGrace is how long a refund_pending purchase may be without its
// refund execution before it is listed: the relay starts it within seconds,
// the outbox sweeper within a few minutes if the relay fails.
const RefundStartGrace = 5 * time.Minute

// RefundStuckAfter is how long a refund execution may run before it is
// listed as stuck: the saga's Refund step retries for about 15 minutes and
// its CheckRefund step polls for about 50 more (statemachines/purchase.asl.json).
const RefundStuckAfter = 75 * time.Minute

// RefundExecutionOf names the execution that owns a refund_pending
// purchase's refund: its own saga when the refund began there (access could
// not be granted), else the execution refund.requested started (a late
// payment, a person's decision).
func RefundExecutionOf(r Row) string {
	switch r.Previous {
	case purchase.StatusAwaitingProvider, purchase.StatusPaymentPending, purchase.StatusCheckingPayment:
		return purchase.ExecutionName(r.PurchaseID)
	}
	return purchase.RefundRequestExecutionName(events.RefundRequested{PurchaseID: r.PurchaseID, Attempt: r.RefundAttempts})
}

// AssessRefunds returns the refund_pending rows whose refund has no owner a
// person can count on: its execution is missing past RefundStartGrace,
// ended while the purchase still waits for its refund, or has run past
// RefundStuckAfter; and, not stuck, those whose refund the provider has
// failed, which a person will have to refund again. executions nil means Step Functions cannot be asked:
// every refund_pending row past the grace is listed as unknown. Rows in
// other statuses are ignored.
func AssessRefunds(ctx context.Context, rows []Row, executions Executions, now time.Time) []Item {
	var items []Item
	for _, r := range rows {
		if r.Status != purchase.StatusRefundPending {
			continue
		}
		it := Item{Row: r, Age: max(now.Sub(r.Since), 0), Provider: ProviderNotAsked}
		name := RefundExecutionOf(r)
		if executions == nil {
			if it.Age >= RefundStartGrace {
				it.Stuck = true
				it.NextStep = "refund execution " + name + " unknown (Step Functions not reachable): check it"
				items = append(items, it)
			}
			continue
		}
		status, started, found, err := executions.Execution(ctx, name)
		switch {
		case err != nil:
			it.Stuck = it.Age >= RefundStartGrace
			it.NextStep = fmt.Sprintf("refund execution %s unknown (%v): check it", name, err)
		case !found && it.Age >= RefundStartGrace:
			it.Stuck = true
			it.NextStep = "missing: no refund execution " + name + " (the relay and the sweeper start it from the refund.requested row; check clubctl status, the outbox and RelayFailuresQueue)"
		case !found:
			continue // the relay is about to start it
		case status != "RUNNING":
			it.Stuck = true
			it.NextStep = fmt.Sprintf("stuck: refund execution %s ended %s but the purchase is still refund_pending: ask the provider for refund %s, then clubctl reconcile resolve",
				name, status, r.RefundKey)
		case now.Sub(started) > RefundStuckAfter:
			it.Stuck = true
			it.NextStep = fmt.Sprintf("stuck: refund execution %s has run since %s, past the saga's refund bounds (%s)",
				name, started.UTC().Format(time.RFC3339), RefundStuckAfter)
		case r.RefundStatus == purchase.ProviderFailed:
			// Not stuck: the execution's next check hands the purchase over.
			it.NextStep = fmt.Sprintf("refund %s (key %s) failed at the provider: %s moves the purchase to needs_reconciliation at its next check; then refund again, with key %s",
				r.RefundID, r.RefundKey, name, r.NextRefundKey)
		default:
			continue // the execution owns it and is within its bounds
		}
		if it.NextStep != "" {
			items = append(items, it)
		}
	}
	return items
}
