package reconcile_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/ops/reconcile"
	"github.com/clubdev/club/internal/ops/reconcile/reconciletest"
	"github.com/clubdev/club/internal/payment"
)

func byID(items []reconcile.Item) map[string]reconcile.Item {
	m := map[string]reconcile.Item{}
	for _, it := range items {
		m[it.PurchaseID] = it
	}
	return m
}

// Every case gets the next step its status and the provider's answer call
// for; a confirmed purchase is not listed.
func TestAssessNextSteps(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	w := reconciletest.New(t, now)
	ctx := context.Background()
	rows, err := reconcile.Scan(ctx, w.DB, w.Config.ClubTable, reconcile.Statuses)
	require.NoError(t, err)
	require.Len(t, rows, 6)
	client, err := payment.New(payment.Config{BaseURL: w.ProviderURL})
	require.NoError(t, err)
	items := byID(reconcile.Assess(ctx, rows, client, now))
	require.NotContains(t, items, w.IDs[reconciletest.Confirmed])

	tests := []struct {
		name, provider, step string
		status               purchase.Status
	}{
		{reconciletest.CheckingRecent, "pending", "the saga polls the provider; next check by " +
			w.Since[reconciletest.CheckingRecent].Add(70*time.Second).UTC().Format(time.RFC3339), purchase.StatusCheckingPayment},
		{reconciletest.Succeeded, "succeeded", "payment taken: grant access or refund with key refund-" +
			w.IDs[reconciletest.Succeeded] + "-1 (docs/purchase-saga.md)", purchase.StatusNeedsReconciliation},
		{reconciletest.Failed, "failed", "release the hold: no money moved", purchase.StatusNeedsReconciliation},
		{reconciletest.Pending, "pending", "release the hold: no money moved", purchase.StatusNeedsReconciliation},
		{reconciletest.NoPayment, reconcile.ProviderNotAsked, "ask the provider with key pay-" +
			w.IDs[reconciletest.NoPayment], purchase.StatusNeedsReconciliation},
	}
	for _, tc := range tests {
		it, ok := items[w.IDs[tc.name]]
		require.True(t, ok, tc.name)
		require.Equal(t, tc.status, it.Status, tc.name)
		require.Equal(t, tc.provider, it.Provider, tc.name)
		require.Equal(t, tc.step, it.NextStep, tc.name)
		require.True(t, it.Since.Equal(w.Since[tc.name]), "%s: since %s, want %s", tc.name, it.Since, w.Since[tc.name])
		require.Equal(t, now.Sub(w.Since[tc.name]), it.Age, tc.name)
		require.Equal(t, "student-"+tc.name, it.StudentID, tc.name)
	}
	stuck := items[w.IDs[reconciletest.CheckingStuck]]
	require.True(t, stuck.Stuck)
	require.Contains(t, stuck.NextStep, "stuck: no execution polling")
	require.True(t, stuck.NextCheckBy.IsZero())
}

// A provider that does not answer leaves every purchase listed, marked
// "provider unreachable"; a purchase needing reconciliation is then to be
// asked about with its payment key.
func TestAssessProviderUnreachable(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	w := reconciletest.New(t, now)
	ctx := context.Background()
	rows, err := reconcile.Scan(ctx, w.DB, w.Config.ClubTable, []purchase.Status{purchase.StatusNeedsReconciliation})
	require.NoError(t, err)
	require.Len(t, rows, 4)

	gone := httptest.NewServer(nil)
	gone.Close() // nothing listens there any more
	client, err := payment.New(payment.Config{BaseURL: gone.URL})
	require.NoError(t, err)
	items := byID(reconcile.Assess(ctx, rows, client, now))
	require.Len(t, items, 4)
	for _, name := range []string{reconciletest.Succeeded, reconciletest.Failed, reconciletest.Pending} {
		it := items[w.IDs[name]]
		require.Equal(t, reconcile.ProviderUnreachable, it.Provider, name)
		require.Equal(t, "ask the provider with key pay-"+w.IDs[name], it.NextStep, name)
	}
}

// The next check of a purchase in checking_payment is the first scheduled
// one not yet due; past the limit it is stuck.
func TestAssessCheckSchedule(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		age   time.Duration
		next  time.Duration
		stuck bool
	}{
		{0, 0, false},
		{5 * time.Second, 10 * time.Second, false},
		{200 * time.Second, 270 * time.Second, false},
		{400 * time.Second, reconcile.StuckAfter, false},
		{reconcile.StuckAfter + time.Second, 0, true},
	} {
		row := reconcile.Row{PurchaseID: "p", Status: purchase.StatusCheckingPayment, Since: since}
		it := reconcile.Assess(context.Background(), []reconcile.Row{row}, nil, since.Add(tc.age))[0]
		require.Equal(t, tc.stuck, it.Stuck, tc.age)
		if !tc.stuck {
			require.Equal(t, since.Add(tc.next), it.NextCheckBy, tc.age)
		}
	}
}

// A paid purchase handed over after its refund began can only be refunded
// (its seat went back): the next step names the key the refund will be
// asked with, a new one after the provider failed the last refund.
func TestAssessRefundNextSteps(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	row := reconcile.Row{
		PurchaseID: "p-1", Status: purchase.StatusNeedsReconciliation, Since: since,
		PaymentID: "pay_1", RecordedPaymentStatus: purchase.ProviderSucceeded, Previous: purchase.StatusRefundPending,
	}
	failed, pending := row, row
	failed.RefundKey, failed.RefundID, failed.RefundStatus, failed.NextRefundKey = "refund-p-1-2", "re_2", purchase.ProviderFailed, "refund-p-1-3"
	pending.RefundKey, pending.RefundID, pending.RefundStatus, pending.NextRefundKey = "refund-p-1-1", "re_1", purchase.ProviderPending, "refund-p-1-1"
	items := reconcile.Assess(context.Background(), []reconcile.Row{failed, pending}, nil, since)
	require.Equal(t, "refund re_2 (key refund-p-1-2) failed at the provider: refund again, with key refund-p-1-3 (docs/purchase-saga.md)", items[0].NextStep)
	require.Equal(t, `refund with key refund-p-1-1 not confirmed (provider said "pending"): refund again, the same key finds it (docs/purchase-saga.md)`, items[1].NextStep)
}
