package reconcile_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/ops/reconcile"
)

// executions answers from a map of name → status and start.
type executions map[string]struct {
	status  string
	started time.Time
}

func (x executions) Execution(_ context.Context, name string) (string, time.Time, bool, error) {
	if name == "boom-refund" {
		return "", time.Time{}, false, errors.New("throttled")
	}
	e, ok := x[name]
	return e.status, e.started, ok, nil
}

// A refund_pending purchase is listed only when nothing will refund it:
// no execution past the grace, an execution that ended, or one running past
// the saga's bounds. The owner is the saga itself when the refund began
// there, else <id>-refund (-<n> for a later refund).
func TestAssessRefunds(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 3, 13, 0, 0, 0, time.UTC)
	row := func(id string, previous purchase.Status, attempts int, age time.Duration) reconcile.Row {
		return reconcile.Row{PurchaseID: id, Status: purchase.StatusRefundPending, Previous: previous, RefundAttempts: attempts, Since: now.Add(-age)}
	}
	rows := []reconcile.Row{
		row("fresh", purchase.StatusExpired, 1, time.Minute),                          // no execution yet: the relay is on it
		row("missing", purchase.StatusExpired, 1, 10*time.Minute),                     // no execution, long past the grace
		row("running", purchase.StatusExpired, 1, 10*time.Minute),                     // running within bounds
		row("ended", purchase.StatusExpired, 1, 10*time.Minute),                       // ended, still refund_pending
		row("slow", purchase.StatusNeedsReconciliation, 2, 2*time.Hour),               // a second refund, running for two hours
		row("in-saga", purchase.StatusPaymentPending, 1, 10*time.Minute),              // grant failed: the saga refunds
		row("boom", purchase.StatusExpired, 1, 10*time.Minute),                        // Step Functions did not answer
		failedRefund(row("failed", purchase.StatusExpired, 1, 10*time.Minute)),        // running, but the provider failed the refund
		{PurchaseID: "other", Status: purchase.StatusNeedsReconciliation, Since: now}, // not this function's business
	}
	x := executions{
		"running-refund": {"RUNNING", now.Add(-9 * time.Minute)},
		"ended-refund":   {"FAILED", now.Add(-9 * time.Minute)},
		"slow-refund-2":  {"RUNNING", now.Add(-2 * time.Hour)},
		"in-saga":        {"RUNNING", now.Add(-20 * time.Minute)},
		"failed-refund":  {"RUNNING", now.Add(-9 * time.Minute)},
	}
	got := byID(reconcile.AssessRefunds(context.Background(), rows, x, now))
	require.ElementsMatch(t, []string{"missing", "ended", "slow", "boom", "failed"}, keys(got))
	require.Equal(t, "refund re_1 (key refund-failed-1) failed at the provider: failed-refund moves the purchase to needs_reconciliation at its next check; then refund again, with key refund-failed-2",
		got["failed"].NextStep)
	require.False(t, got["failed"].Stuck, "its execution hands it over")
	delete(got, "failed")
	require.True(t, strings.HasPrefix(got["missing"].NextStep, "missing: no refund execution missing-refund"), got["missing"].NextStep)
	require.Contains(t, got["ended"].NextStep, "ended FAILED")
	require.Contains(t, got["slow"].NextStep, "slow-refund-2")
	require.Contains(t, got["boom"].NextStep, "throttled")
	for _, it := range got {
		require.True(t, it.Stuck, it.PurchaseID)
	}

	// Without Step Functions: every refund_pending row past the grace.
	blind := byID(reconcile.AssessRefunds(context.Background(), rows, nil, now))
	require.ElementsMatch(t, []string{"missing", "running", "ended", "slow", "in-saga", "boom", "failed"}, keys(blind))
	require.Equal(t, "in-saga", reconcile.RefundExecutionOf(rows[5]))
	require.Equal(t, "slow-refund-2", reconcile.RefundExecutionOf(rows[4]))
}

func failedRefund(r reconcile.Row) reconcile.Row {
	r.RefundKey, r.RefundID, r.RefundStatus = purchase.RefundKey(r.PurchaseID, 1), "re_1", purchase.ProviderFailed
	r.NextRefundKey = purchase.RefundKey(r.PurchaseID, 2)
	return r
}

func keys(m map[string]reconcile.Item) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
