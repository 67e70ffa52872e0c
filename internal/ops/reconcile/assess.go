package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/payment"
)

// Provider is the part of *payment.Client that Assess uses.
type Provider interface {
	GetPayment(ctx context.Context, paymentID string) (payment.Payment, error)
}

var _ Provider = (*payment.Client)(nil)

// CheckSchedule is when, at the latest, the saga's check_payment step asks
// the provider, counted from entering checking_payment: a first call at
// once, then 6 retries waiting 10 s doubling, capped at 120 s, with full
// jitter (statemachines/purchase.asl.json), so each wait is at most its
// nominal value.
var CheckSchedule = []time.Duration{
	0, 10 * time.Second, 30 * time.Second, 70 * time.Second,
	150 * time.Second, 270 * time.Second, 390 * time.Second,
}

// StuckGrace is how long past the last scheduled check a purchase may stay
// in checking_payment (the last call, the write of its result) before no
// execution can still be polling for it.
const StuckGrace = time.Minute

// StuckAfter is the age in checking_payment past which no saga execution
// is polling the provider any more.
var StuckAfter = CheckSchedule[len(CheckSchedule)-1] + StuckGrace

// What the provider says, besides its own statuses.
const (
	ProviderUnreachable = "provider unreachable"
	// ProviderNotAsked: the purchase has no payment id to ask about.
	ProviderNotAsked = "no payment id"
	// ProviderNotFound: the provider has no payment with the recorded id.
	ProviderNotFound = "not found"
)

// Item is a purchase to look at and what to do about it.
type Item struct {
	Row
	// Age is how long the purchase has been in its status.
	Age time.Duration
	// Provider is the payment's status at the provider now ("pending",
	// "succeeded", "failed"), or ProviderUnreachable, ProviderNotAsked or
	// ProviderNotFound.
	Provider string
	// NextCheckBy is, for checking_payment, the latest time the saga asks
	// the provider next; zero when no execution is polling any more.
	NextCheckBy time.Time
	// Stuck: in checking_payment past StuckAfter.
	Stuck bool
	// NextStep says in words what happens next or what a person must do.
	NextStep string
}

// Assess asks provider (nil: unreachable) about the payment of each row
// and decides each row's next step, as of now. A provider that fails to
// answer makes the row's Provider ProviderUnreachable, never an error. The
// items are ordered oldest in their status first.
func Assess(ctx context.Context, rows []Row, provider Provider, now time.Time) []Item {
	items := make([]Item, 0, len(rows))
	for _, r := range rows {
		if r.Status == purchase.StatusRefundPending {
			continue // AssessRefunds decides whether a person must look
		}
		it := Item{Row: r, Age: max(now.Sub(r.Since), 0), Provider: ask(ctx, provider, r.PaymentID)}
		switch r.Status {
		case purchase.StatusCheckingPayment:
			it.NextCheckBy, it.Stuck = nextCheck(r.Since, it.Age)
			if it.Stuck {
				it.NextStep = "stuck: no execution polling (in checking_payment longer than the saga's backoff limit of " +
					StuckAfter.String() + "): find the purchase's execution; if it ended, decide as for needs_reconciliation"
			} else {
				it.NextStep = "the saga polls the provider; next check by " + it.NextCheckBy.UTC().Format(time.RFC3339)
			}
		case purchase.StatusNeedsReconciliation:
			it.NextStep = reconcileStep(r, it.Provider)
		default:
			it.NextStep = "nothing: the saga owns a purchase in " + string(r.Status)
		}
		items = append(items, it)
	}
	slices.SortStableFunc(items, func(a, b Item) int {
		return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.PurchaseID, b.PurchaseID))
	})
	return items
}

func ask(ctx context.Context, provider Provider, paymentID string) string {
	if paymentID == "" {
		return ProviderNotAsked
	}
	if provider == nil {
		return ProviderUnreachable
	}
	p, err := provider.GetPayment(ctx, paymentID)
	switch {
	case errors.Is(err, payment.ErrNotFound):
		return ProviderNotFound
	case err != nil:
		return ProviderUnreachable
	}
	return string(p.Status)
}

// nextCheck returns the latest time of the next scheduled check after age,
// or stuck when age is past StuckAfter.
func nextCheck(since time.Time, age time.Duration) (time.Time, bool) {
	if age > StuckAfter {
		return time.Time{}, true
	}
	for _, at := range CheckSchedule {
		if at >= age {
			return since.Add(at), false
		}
	}
	// Past the last scheduled check, within the grace: its result is due.
	return since.Add(StuckAfter), false
}

// reconcileStep is the person's next step for a needs_reconciliation
// purchase, from what the provider says now or, when it cannot be asked, a
// definite answer recorded on the row.
func reconcileStep(r Row, provider string) string {
	status := provider
	switch provider {
	case ProviderUnreachable, ProviderNotAsked, ProviderNotFound:
		if r.RecordedPaymentStatus.Final() {
			status = string(r.RecordedPaymentStatus)
		}
	}
	switch payment.Status(status) {
	case payment.StatusSucceeded:
		switch {
		case r.RefundStatus == purchase.ProviderFailed:
			return fmt.Sprintf("refund %s (key %s) failed at the provider: refund again, with key %s (docs/purchase-saga.md)",
				r.RefundID, r.RefundKey, r.NextRefundKey)
		case r.RefundKey != "":
			// The seat was released when the refund began: only refund is left.
			return fmt.Sprintf("refund with key %s not confirmed (provider said %q): refund again, the same key finds it (docs/purchase-saga.md)",
				r.RefundKey, r.RefundStatus)
		}
		return "payment taken: grant access or refund with key " + r.NextRefundKey + " (docs/purchase-saga.md)"
	case payment.StatusFailed, payment.StatusPending:
		return "release the hold: no money moved"
	}
	return "ask the provider with key " + purchase.PaymentKey(r.PurchaseID)
}
