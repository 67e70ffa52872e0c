package clubctl

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/ops/reconcile/reconciletest"
	"github.com/clubdev/club/internal/stackfile"
)

// reconcileEnv seeds the reconciliation cases and writes a local stack file
// naming their table and, unless paymentURL is "-", the payment provider
// (paymentURL, or the world's sandbox when empty).
func reconcileEnv(t *testing.T, now time.Time, paymentURL string) (*reconciletest.World, string) {
	t.Helper()
	w := reconciletest.New(t, now)
	switch paymentURL {
	case "":
		paymentURL = w.ProviderURL
	case "-":
		paymentURL = ""
	}
	stack := &stackfile.Stack{
		Endpoint: w.Endpoint, IssuerKeyFile: "issuer-key.pem", PaymentURL: paymentURL,
		Tables: map[string]string{"ClubTable": w.Config.ClubTable, "OutboxTable": w.Config.OutboxTable},
	}
	path := filepath.Join(t.TempDir(), "stack.json")
	require.NoError(t, stack.Save(path))
	return w, path
}

func clockAt(now time.Time) func(*Globals) {
	return func(g *Globals) { g.Now = func() time.Time { return now } }
}

func TestReconcileJSON(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	w, path := reconcileEnv(t, now, "")
	code, stdout, stderr := runWith(t, clockAt(now), "reconcile", "--stack-file", path, "--json")
	require.Equal(t, 0, code, stderr)
	var out reconcileOutput
	require.NoError(t, json.Unmarshal([]byte(stdout), &out))
	steps := map[string]string{}
	providers := map[string]string{}
	for _, p := range out.Purchases {
		steps[p.PurchaseID], providers[p.PurchaseID] = p.NextStep, p.ProviderStatus
	}
	require.Len(t, steps, 6)
	require.NotContains(t, steps, w.IDs[reconciletest.Confirmed])
	require.Equal(t, "payment taken: grant access or refund with key refund-"+w.IDs[reconciletest.Succeeded]+"-1 (docs/purchase-saga.md)", steps[w.IDs[reconciletest.Succeeded]])
	require.Equal(t, "succeeded", providers[w.IDs[reconciletest.Succeeded]])
	require.Equal(t, "release the hold: no money moved", steps[w.IDs[reconciletest.Failed]])
	require.Equal(t, "release the hold: no money moved", steps[w.IDs[reconciletest.Pending]])
	require.Equal(t, "ask the provider with key pay-"+w.IDs[reconciletest.NoPayment], steps[w.IDs[reconciletest.NoPayment]])
	require.True(t, strings.HasPrefix(steps[w.IDs[reconciletest.CheckingRecent]], "the saga polls the provider; next check by "))
	require.True(t, strings.HasPrefix(steps[w.IDs[reconciletest.CheckingStuck]], "stuck: no execution polling"))
	// Oldest in its status first: the stuck check, 20 minutes in, is after
	// the needs_reconciliation ones (26 to 30 minutes in).
	require.Equal(t, w.IDs[reconciletest.Succeeded], out.Purchases[0].PurchaseID)
	require.Equal(t, w.IDs[reconciletest.CheckingRecent], out.Purchases[len(out.Purchases)-1].PurchaseID)
}

func TestReconcileFilters(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC()
	w, path := reconcileEnv(t, now, "")
	code, stdout, stderr := runWith(t, clockAt(now), "reconcile", "--stack-file", path, "--status", "checking_payment")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, w.IDs[reconciletest.CheckingRecent])
	require.Contains(t, stdout, w.IDs[reconciletest.CheckingStuck])
	require.NotContains(t, stdout, w.IDs[reconciletest.Succeeded])

	code, stdout, stderr = runWith(t, clockAt(now), "reconcile", "--stack-file", path, "--older-than", "29m")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, w.IDs[reconciletest.Succeeded])
	require.Contains(t, stdout, w.IDs[reconciletest.Failed])
	require.NotContains(t, stdout, w.IDs[reconciletest.Pending])
	require.NotContains(t, stdout, w.IDs[reconciletest.CheckingStuck])
}

// A provider that does not answer, or none in the stack file: every
// purchase is listed, marked "provider unreachable", and the command
// succeeds.
func TestReconcileProviderUnreachable(t *testing.T) {
	t.Parallel()
	gone := httptest.NewServer(nil)
	gone.Close()
	for name, url := range map[string]string{"not answering": gone.URL, "not in stack file": "-"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			now := time.Now().UTC()
			w, path := reconcileEnv(t, now, url)
			code, stdout, stderr := runWith(t, clockAt(now), "reconcile", "--stack-file", path)
			require.Equal(t, 0, code, stderr)
			require.Equal(t, 8, strings.Count(stdout, "\n"), stdout) // title, header, six purchases
			line := lineWith(t, stdout, w.IDs[reconciletest.Succeeded])
			require.Contains(t, line, "provider unreachable")
			require.Contains(t, line, "ask the provider with key pay-"+w.IDs[reconciletest.Succeeded])
		})
	}
}

func lineWith(t *testing.T, text, s string) string {
	t.Helper()
	for line := range strings.Lines(text) {
		if strings.Contains(line, s) {
			return line
		}
	}
	t.Fatalf("no line with %q in:\n%s", s, text)
	return ""
}

func TestReconcileNoStackFile(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runWith(t, nil, "reconcile", "--stack-file", filepath.Join(t.TempDir(), "missing.json"))
	require.Equal(t, 1, code)
	require.Empty(t, stdout)
	require.Equal(t, 1, strings.Count(stderr, "\n"), stderr)
	require.Contains(t, stderr, "stack file not found")
}

func TestReconcileBadStatus(t *testing.T) {
	t.Parallel()
	code, _, stderr := runWith(t, nil, "reconcile", "--status", "confirmed")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "must be checking_payment, needs_reconciliation or refund_pending")
}
