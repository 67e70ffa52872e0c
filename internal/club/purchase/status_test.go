package purchase

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// The table of allowed transitions, written out independently of the
// implementation: every pair of statuses is checked, allowed or refused.
func TestTransitionTable(t *testing.T) {
	t.Parallel()
	const (
		R  = StatusReserved
		AP = StatusAwaitingProvider
		PP = StatusPaymentPending
		CP = StatusCheckingPayment
		C  = StatusConfirmed
		E  = StatusExpired
		RP = StatusRefundPending
		RF = StatusRefunded
		NR = StatusNeedsReconciliation
	)
	allowed := map[[2]Status]SeatEffect{
		{R, PP}:  SeatUnchanged,
		{R, E}:   SeatReleased,
		{R, NR}:  SeatUnchanged,
		{R, AP}:  SeatUnchanged, // the provider is silent: keep asking, keep the hold
		{AP, PP}: SeatUnchanged,
		{AP, E}:  SeatReleased, // still silent at the cutoff
		{AP, NR}: SeatUnchanged,
		{AP, C}:  SeatTaken,    // paid while the provider did not answer the saga
		{AP, RP}: SeatReleased, // ... and access cannot be granted
		{PP, C}:  SeatTaken,
		{PP, CP}: SeatUnchanged,
		{PP, E}:  SeatReleased,
		{PP, RP}: SeatReleased,
		{PP, NR}: SeatUnchanged,
		{CP, C}:  SeatTaken,
		{CP, E}:  SeatReleased,
		{CP, RP}: SeatReleased,
		{CP, NR}: SeatUnchanged,
		{E, RP}:  SeatUnchanged, // late payment: never a seat back
		{RP, RF}: SeatUnchanged,
		{RP, NR}: SeatUnchanged,
		{NR, RF}: SeatUnchanged,
		{NR, C}:  SeatTaken,    // resolve confirm (needs the hold: SeatEffectBetween)
		{NR, E}:  SeatReleased, // resolve release (needs the hold)
		{NR, RP}: SeatReleased, // resolve refund (releases the hold if it has one)
	}
	all := Statuses()
	require.Len(t, all, 9)
	checked := 0
	for _, from := range all {
		for _, to := range all {
			t.Run(fmt.Sprintf("%s->%s", from, to), func(t *testing.T) {
				want, ok := allowed[[2]Status{from, to}]
				require.Equal(t, ok, CanTransition(from, to))
				effect, got := SeatEffectOf(from, to)
				require.Equal(t, ok, got)
				if ok {
					require.Equal(t, want, effect)
				}
			})
			checked++
		}
	}
	require.Equal(t, 81, checked)
}

// Seat accounting: a transition's seat effect is exactly the change in
// whether the purchase holds or owns a seat.
func TestSeatEffectsKeepTheCounters(t *testing.T) {
	t.Parallel()
	for e, effect := range transitions {
		from, to := seatAccounting[e.from], seatAccounting[e.to]
		var want SeatEffect
		switch {
		case to == seatAmbiguous, from == to:
			want = SeatUnchanged // needs_reconciliation keeps what it had
		case from == seatHeld && to == seatNone:
			want = SeatReleased
		case from == seatHeld && to == seatOwned:
			want = SeatTaken
		case e == edge{StatusNeedsReconciliation, StatusRefunded}:
			want = SeatUnchanged // only a purchase without a hold gets refunded from there (MarkRefunded needs a refund intent)
		case from == seatAmbiguous && to == seatNone:
			want = SeatReleased // a person resolved it; SeatEffectBetween drops the release when there is no hold
		case from == seatAmbiguous && to == seatOwned:
			want = SeatTaken // a person confirmed it; SeatEffectBetween refuses it without a hold
		default:
			t.Fatalf("%s -> %s moves a seat in a way the counters cannot express", e.from, e.to)
		}
		require.Equal(t, want, effect, "%s -> %s", e.from, e.to)
	}
}

func TestFinalStatuses(t *testing.T) {
	t.Parallel()
	var final []Status
	for _, s := range Statuses() {
		require.True(t, s.Valid())
		if s.Final() {
			final = append(final, s)
		}
	}
	require.ElementsMatch(t, []Status{StatusConfirmed, StatusRefunded}, final)
	require.False(t, Status("paid").Valid())
}

func TestTransitionError(t *testing.T) {
	t.Parallel()
	var err error = &TransitionError{From: StatusConfirmed, To: StatusExpired}
	require.ErrorIs(t, err, ErrInvalidTransition)
	require.ErrorIs(t, fmt.Errorf("wrapped: %w", err), ErrInvalidTransition)
	require.False(t, errors.Is(err, ErrStaleStep))
	require.Equal(t, "purchase cannot go from confirmed to expired", err.Error())
}

// Out of needs_reconciliation the seat effect depends on what the purchase
// kept: a hold (it came from a held status) or nothing (from refund_pending).
func TestSeatEffectBetweenOutOfNeedsReconciliation(t *testing.T) {
	t.Parallel()
	at := func(statuses ...Status) Purchase {
		var h []HistoryEntry
		for _, s := range statuses {
			h = append(h, HistoryEntry{Status: s})
		}
		return FromSnapshot(Snapshot{Status: statuses[len(statuses)-1], History: h})
	}
	held := at(StatusReserved, StatusPaymentPending, StatusCheckingPayment, StatusNeedsReconciliation)
	unheld := at(StatusReserved, StatusPaymentPending, StatusExpired, StatusRefundPending, StatusNeedsReconciliation)
	require.True(t, held.HoldsSeat())
	require.False(t, unheld.HoldsSeat())
	require.True(t, at(StatusReserved, StatusAwaitingProvider).HoldsSeat())
	for _, tc := range []struct {
		before Purchase
		to     Status
		effect SeatEffect
		ok     bool
	}{
		{held, StatusConfirmed, SeatTaken, true},
		{held, StatusExpired, SeatReleased, true},
		{held, StatusRefundPending, SeatReleased, true},
		{unheld, StatusConfirmed, SeatUnchanged, false},
		{unheld, StatusExpired, SeatUnchanged, true},
		{unheld, StatusRefundPending, SeatUnchanged, true},
		{unheld, StatusRefunded, SeatUnchanged, true},
		{held, StatusReserved, SeatUnchanged, false},
	} {
		after := FromSnapshot(Snapshot{Status: tc.to})
		effect, ok := SeatEffectBetween(tc.before, after)
		require.Equal(t, tc.ok, ok, "%v -> %s", statusesOf(tc.before), tc.to)
		require.Equal(t, tc.effect, effect, "%v -> %s", statusesOf(tc.before), tc.to)
	}
}

func statusesOf(p Purchase) []Status {
	var out []Status
	for _, h := range p.History() {
		out = append(out, h.Status)
	}
	return out
}
