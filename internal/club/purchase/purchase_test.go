package purchase_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/purchase"
)

var t0 = time.Date(2026, 3, 3, 12, 0, 0, 0, time.UTC)

func intensive(t *testing.T, capacity int) purchase.Intensive {
	t.Helper()
	in, err := purchase.NewIntensive("i-1", "teacher-1", "Go in a week", capacity,
		purchase.Price{AmountCents: 49900, Currency: "EUR"}, 900, t0)
	require.NoError(t, err)
	return in
}

func newPurchase(t *testing.T) purchase.Purchase {
	t.Helper()
	p, err := purchase.New("p-1", intensive(t, 3), "student-1", t0)
	require.NoError(t, err)
	return p
}

func TestNewIntensiveValidation(t *testing.T) {
	t.Parallel()
	ok := purchase.Price{AmountCents: 100, Currency: "EUR"}
	tests := []struct {
		name     string
		title    string
		capacity int
		price    purchase.Price
		hold     int
		field    string // "" when valid
	}{
		{"valid", "Go", 10, ok, 60, ""},
		{"default hold", "Go", 10, ok, 0, ""},
		{"blank title", "  ", 10, ok, 60, "title"},
		{"long title", strings.Repeat("я", 201), 10, ok, 60, "title"},
		{"zero capacity", "Go", 0, ok, 60, "capacity"},
		{"huge capacity", "Go", 10001, ok, 60, "capacity"},
		{"free", "Go", 10, purchase.Price{AmountCents: 0, Currency: "EUR"}, 60, "price.amount_cents"},
		{"lower-case currency", "Go", 10, purchase.Price{AmountCents: 1, Currency: "eur"}, 60, "price.currency"},
		{"short currency", "Go", 10, purchase.Price{AmountCents: 1, Currency: "EU"}, 60, "price.currency"},
		{"hold too short", "Go", 10, ok, 4, "hold_seconds"},
		{"hold too long", "Go", 10, ok, 3601, "hold_seconds"},
		{"hold at bounds", "Go", 10, ok, 3600, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in, err := purchase.NewIntensive("i-1", "teacher-1", tt.title, tt.capacity, tt.price, tt.hold, t0)
			if tt.field == "" {
				require.NoError(t, err)
				require.Equal(t, tt.capacity, in.SeatsFree())
				if tt.hold == 0 {
					require.Equal(t, purchase.DefaultHoldSeconds, in.HoldSeconds())
				}
				return
			}
			ve, ok := err.(*club.ValidationError)
			require.True(t, ok, "%v", err)
			require.Equal(t, tt.field, ve.Field)
		})
	}
}

func TestNewPurchaseHoldsUntilTheDeadline(t *testing.T) {
	t.Parallel()
	p := newPurchase(t)
	require.Equal(t, purchase.StatusReserved, p.Status())
	require.Equal(t, t0.Add(15*time.Minute), p.HoldExpiresAt())
	require.Equal(t, []purchase.HistoryEntry{{Status: purchase.StatusReserved, At: t0}}, p.History())
	require.False(t, p.HoldExpired(t0.Add(15*time.Minute-time.Nanosecond)))
	require.True(t, p.HoldExpired(t0.Add(15*time.Minute)))
	require.Equal(t, "pay-p-1", p.PaymentKey())
	require.Empty(t, p.RefundKey(), "no refund attempt before a refund intent")
	require.True(t, p.VisibleTo("student-1"))
	require.False(t, p.VisibleTo("student-2"))
	require.False(t, p.VisibleTo(""))
}

func TestHappyPathHistory(t *testing.T) {
	t.Parallel()
	p := newPurchase(t)
	require.NoError(t, p.RecordPayment("pay_1", "http://checkout/pay_1", purchase.ProviderPending, t0.Add(time.Second)))
	require.NoError(t, p.AttachTaskToken("token-1"))
	require.Equal(t, "token-1", p.TaskToken())
	require.NoError(t, p.ObservePayment("pay_1", purchase.ProviderSucceeded))
	require.NoError(t, p.Confirm(t0.Add(time.Minute)))
	require.Equal(t, purchase.StatusConfirmed, p.Status())
	require.Empty(t, p.TaskToken(), "the token is dropped once the wait is over")
	require.Equal(t, []purchase.HistoryEntry{
		{Status: purchase.StatusReserved, At: t0},
		{Status: purchase.StatusPaymentPending, At: t0.Add(time.Second)},
		{Status: purchase.StatusConfirmed, At: t0.Add(time.Minute)},
	}, p.History())
}

// An exact repeat of a step changes nothing: not the status, not the
// history.
func TestExactRepeatsAreNoOps(t *testing.T) {
	t.Parallel()
	p := newPurchase(t)
	require.NoError(t, p.RecordPayment("pay_1", "http://checkout/pay_1", purchase.ProviderPending, t0.Add(time.Second)))
	before := p
	require.NoError(t, p.RecordPayment("pay_1", "http://checkout/pay_1", purchase.ProviderPending, t0.Add(time.Hour)))
	require.True(t, before.Equal(p))

	require.NoError(t, p.Expire("no payment", t0.Add(15*time.Minute)))
	expired := p
	require.NoError(t, p.Expire("again", t0.Add(16*time.Minute)))
	require.True(t, expired.Equal(p))
	require.Equal(t, "no payment", p.Note())
	require.Len(t, p.History(), 3)
}

func TestStaleAndInvalidSteps(t *testing.T) {
	t.Parallel()
	p := newPurchase(t)
	require.NoError(t, p.RecordPayment("pay_1", "u", purchase.ProviderSucceeded, t0))
	require.NoError(t, p.Confirm(t0))

	require.ErrorIs(t, p.Expire("late", t0), purchase.ErrInvalidTransition)
	require.ErrorIs(t, p.StartChecking(t0), purchase.ErrInvalidTransition)
	require.ErrorIs(t, p.AttachTaskToken("t"), purchase.ErrStaleStep)
	require.ErrorIs(t, p.RecordPayment("pay_2", "u", purchase.ProviderPending, t0), purchase.ErrPaymentMismatch)
	require.ErrorIs(t, p.RecordRefund("re_1", purchase.ProviderPending), purchase.ErrStaleStep)
	require.Equal(t, purchase.StatusConfirmed, p.Status())
}

func TestConfirmNeedsASucceededPayment(t *testing.T) {
	t.Parallel()
	p := newPurchase(t)
	require.NoError(t, p.RecordPayment("pay_1", "u", purchase.ProviderPending, t0))
	require.Error(t, p.Confirm(t0))
	require.Equal(t, purchase.StatusPaymentPending, p.Status())
}

// A final provider status never reverts: a lagging read says pending after
// the webhook said succeeded.
func TestObservedStatusOnlyMovesForward(t *testing.T) {
	t.Parallel()
	p := newPurchase(t)
	require.NoError(t, p.RecordPayment("pay_1", "u", purchase.ProviderPending, t0))
	require.NoError(t, p.ObservePayment("pay_1", purchase.ProviderSucceeded))
	require.NoError(t, p.ObservePayment("pay_1", purchase.ProviderPending))
	require.Equal(t, purchase.ProviderSucceeded, p.PaymentStatus())
	require.ErrorIs(t, p.ObservePayment("pay_9", purchase.ProviderSucceeded), purchase.ErrPaymentMismatch)
}

// Expiring a purchase whose payment was seen to succeed is refused: the
// money came while the seat was still held.
func TestExpireRefusesAPaidPurchase(t *testing.T) {
	t.Parallel()
	p := newPurchase(t)
	require.NoError(t, p.RecordPayment("pay_1", "u", purchase.ProviderPending, t0))
	require.NoError(t, p.StartChecking(t0.Add(15*time.Minute)))
	require.NoError(t, p.ObservePayment("pay_1", purchase.ProviderSucceeded))
	require.ErrorIs(t, p.Expire("deadline", t0.Add(15*time.Minute)), purchase.ErrPaymentSucceeded)
	require.Equal(t, purchase.StatusCheckingPayment, p.Status())
}

func TestLatePaymentRefund(t *testing.T) {
	t.Parallel()
	p := newPurchase(t)
	require.NoError(t, p.RecordPayment("pay_1", "u", purchase.ProviderPending, t0))
	require.NoError(t, p.Expire("no payment", t0.Add(15*time.Minute)))

	require.Error(t, p.BeginRefund("nothing was paid", t0.Add(16*time.Minute)), "only money received is refunded")
	require.NoError(t, p.ObservePayment("pay_1", purchase.ProviderSucceeded))
	require.NoError(t, p.BeginRefund("late", t0.Add(20*time.Minute)))
	require.True(t, p.LatePayment())
	require.True(t, p.RefundRequested())
	require.Equal(t, purchase.StatusRefundPending, p.Status())

	require.Error(t, p.MarkRefunded(t0.Add(21*time.Minute)), "needs a succeeded refund")
	require.NoError(t, p.RecordRefund("re_1", purchase.ProviderPending))
	require.ErrorIs(t, p.RecordRefund("re_2", purchase.ProviderSucceeded), purchase.ErrPaymentMismatch, "one key, one refund")
	require.NoError(t, p.RecordRefund("re_1", purchase.ProviderSucceeded))
	require.NoError(t, p.MarkRefunded(t0.Add(22*time.Minute)))
	require.Equal(t, purchase.StatusRefunded, p.Status())
	statuses := []purchase.Status{}
	for _, h := range p.History() {
		statuses = append(statuses, h.Status)
	}
	require.Equal(t, []purchase.Status{
		purchase.StatusReserved, purchase.StatusPaymentPending, purchase.StatusExpired,
		purchase.StatusRefundPending, purchase.StatusRefunded,
	}, statuses)
}

// A purchase that needs reconciliation because its payment was unknown
// holds no refund intent, so a refund notice cannot mark it refunded.
func TestReconciliationKeepsTheRefundRule(t *testing.T) {
	t.Parallel()
	p := newPurchase(t)
	require.NoError(t, p.RecordPayment("pay_1", "u", purchase.ProviderPending, t0))
	require.NoError(t, p.StartChecking(t0))
	require.NoError(t, p.NeedReconciliation("provider silent", t0))
	require.ErrorIs(t, p.RecordRefund("re_1", purchase.ProviderSucceeded), purchase.ErrStaleStep)
	require.Error(t, p.MarkRefunded(t0))
	require.Equal(t, purchase.StatusNeedsReconciliation, p.Status())
	require.Equal(t, "provider silent", p.Note())
}

func TestSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	p := newPurchase(t)
	require.NoError(t, p.RecordPayment("pay_1", "u", purchase.ProviderPending, t0))
	require.NoError(t, p.AttachTaskToken("tok"))
	q := purchase.FromSnapshot(p.Snapshot())
	require.True(t, p.Equal(q))
	require.NoError(t, q.StartChecking(t0))
	require.False(t, p.Equal(q))
	require.Equal(t, purchase.StatusPaymentPending, p.Status(), "snapshots do not share history")
	require.Len(t, p.History(), 2)
}
