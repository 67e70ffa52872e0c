package purchase

import (
	"errors"
	"fmt"
)

// Status is the business status of a purchase (docs/principles.md §6). It lives on the
// purchase row and changes only by a conditional write from an allowed
// previous status; it is never inferred from the workflow engine or the
// payment provider.
type Status string

const (
	// StatusReserved: a seat is held until the hold deadline; no payment
	// has been requested yet.
	StatusReserved Status = "reserved"
	// StatusAwaitingProvider: the seat is held, and the payment provider has
	// not answered the request for a payment (a timeout, a 5xx, a 429). The
	// saga keeps asking with the same key, with bounded backoff, until a
	// margin before the hold deadline (PaymentRequestCutoff); no checkout
	// URL has been shown yet.
	StatusAwaitingProvider Status = "awaiting_provider"
	// StatusPaymentPending: the provider has a payment for the purchase and
	// the saga waits for its webhook, at most until the hold deadline.
	StatusPaymentPending Status = "payment_pending"
	// StatusCheckingPayment: the hold deadline passed without a webhook; the
	// saga owns the next step, asking the provider with bounded backoff.
	StatusCheckingPayment Status = "checking_payment"
	// StatusConfirmed: paid, and access granted; the held seat is taken.
	StatusConfirmed Status = "confirmed"
	// StatusExpired: no payment before the deadline (or the payment failed);
	// the held seat went back to the pool.
	StatusExpired Status = "expired"
	// StatusRefundPending: money was received that must go back (access
	// could not be granted, or the payment came after expiry); a refund under
	// the key of the purchase's current refund attempt is requested or about
	// to be.
	StatusRefundPending Status = "refund_pending"
	// StatusRefunded: the provider confirmed the refund.
	StatusRefunded Status = "refunded"
	// StatusNeedsReconciliation: the saga could not reach a definite result
	// within its bounds; a person must act (clubctl reconcile).
	StatusNeedsReconciliation Status = "needs_reconciliation"
)

// Statuses lists every status, in the order of the happy path first.
func Statuses() []Status {
	return []Status{
		StatusReserved, StatusAwaitingProvider, StatusPaymentPending, StatusCheckingPayment, StatusConfirmed,
		StatusExpired, StatusRefundPending, StatusRefunded, StatusNeedsReconciliation,
	}
}

// Valid reports whether s is one of the statuses.
func (s Status) Valid() bool {
	_, ok := seatAccounting[s]
	return ok
}

// SeatEffect is what a transition does to the intensive's seat counters.
// The store applies it in the same transaction as the status change, so the
// counters and the statuses of the purchases never disagree.
type SeatEffect int

const (
	// SeatUnchanged: the counters stay as they are.
	SeatUnchanged SeatEffect = iota
	// SeatReleased: the purchase's held seat becomes free again.
	SeatReleased
	// SeatTaken: the purchase's held seat becomes a taken seat, and the
	// student's access to the intensive is recorded (unique per student).
	SeatTaken
)

func (e SeatEffect) String() string {
	switch e {
	case SeatUnchanged:
		return "unchanged"
	case SeatReleased:
		return "released"
	case SeatTaken:
		return "taken"
	}
	return fmt.Sprintf("SeatEffect(%d)", int(e))
}

type edge struct{ from, to Status }

// transitions is the table of allowed transitions and their seat effects:
// any pair not listed is refused. Why each edge exists:
//
//   - reserved → payment_pending: the provider created the payment.
//   - reserved → awaiting_provider: the provider did not answer the request
//     for a payment; the saga keeps asking, the hold is kept.
//   - awaiting_provider → payment_pending: the provider answered at last.
//   - awaiting_provider → expired: still no answer a margin before the hold
//     deadline; no checkout URL was ever shown, so the hold is released.
//   - awaiting_provider → confirmed | refund_pending: a succeeded payment was
//     observed (a webhook) while the provider did not answer the saga, and
//     the saga grants access (or refunds, if access cannot be granted)
//     instead of expiring a purchase whose money came while its seat was
//     held.
//   - reserved → expired: the hold ran out before a payment could be
//     requested, or the provider refused to create one.
//   - payment_pending → confirmed: the webhook said succeeded, access granted.
//   - payment_pending → checking_payment: the hold deadline passed without
//     a webhook.
//   - payment_pending → expired: the webhook said failed.
//   - payment_pending, checking_payment → refund_pending: paid, but access
//     could not be granted for good (the seat goes back).
//   - checking_payment → confirmed | expired: the provider gave a definite
//     answer (succeeded; pending or failed).
//   - expired → refund_pending: a late payment. The seat was already
//     released (and may be sold again): the counters do not change.
//   - refund_pending → refunded: the provider confirmed the refund.
//   - reserved, payment_pending, checking_payment, refund_pending →
//     needs_reconciliation: the saga ran out of bounded attempts without a
//     definite answer. The hold is kept: the student may have paid, and a
//     person decides.
//   - needs_reconciliation → refunded: a refund the saga gave up waiting
//     for was confirmed by the provider after all.
//   - needs_reconciliation → confirmed | expired | refund_pending: a person
//     resolved the purchase (clubctl reconcile resolve: confirm, release,
//     refund). The seat effect depends on whether the purchase still holds
//     its seat (SeatEffectBetween): confirm and release need the hold.
var transitions = map[edge]SeatEffect{
	{StatusReserved, StatusPaymentPending}:              SeatUnchanged,
	{StatusReserved, StatusExpired}:                     SeatReleased,
	{StatusReserved, StatusNeedsReconciliation}:         SeatUnchanged,
	{StatusReserved, StatusAwaitingProvider}:            SeatUnchanged,
	{StatusAwaitingProvider, StatusPaymentPending}:      SeatUnchanged,
	{StatusAwaitingProvider, StatusExpired}:             SeatReleased,
	{StatusAwaitingProvider, StatusNeedsReconciliation}: SeatUnchanged,
	{StatusAwaitingProvider, StatusConfirmed}:           SeatTaken,
	{StatusAwaitingProvider, StatusRefundPending}:       SeatReleased,
	{StatusPaymentPending, StatusConfirmed}:             SeatTaken,
	{StatusPaymentPending, StatusCheckingPayment}:       SeatUnchanged,
	{StatusPaymentPending, StatusExpired}:               SeatReleased,
	{StatusPaymentPending, StatusRefundPending}:         SeatReleased,
	{StatusPaymentPending, StatusNeedsReconciliation}:   SeatUnchanged,
	{StatusCheckingPayment, StatusConfirmed}:            SeatTaken,
	{StatusCheckingPayment, StatusExpired}:              SeatReleased,
	{StatusCheckingPayment, StatusRefundPending}:        SeatReleased,
	{StatusCheckingPayment, StatusNeedsReconciliation}:  SeatUnchanged,
	{StatusExpired, StatusRefundPending}:                SeatUnchanged,
	{StatusRefundPending, StatusRefunded}:               SeatUnchanged,
	{StatusRefundPending, StatusNeedsReconciliation}:    SeatUnchanged,
	{StatusNeedsReconciliation, StatusRefunded}:         SeatUnchanged,
	{StatusNeedsReconciliation, StatusConfirmed}:        SeatTaken,
	{StatusNeedsReconciliation, StatusExpired}:          SeatReleased,
	{StatusNeedsReconciliation, StatusRefundPending}:    SeatReleased,
}

// seatAccounting says whether a purchase in a status holds a seat: the
// invariant the transition table keeps (tested on its own).
var seatAccounting = map[Status]seatUse{
	StatusReserved:            seatHeld,
	StatusAwaitingProvider:    seatHeld,
	StatusPaymentPending:      seatHeld,
	StatusCheckingPayment:     seatHeld,
	StatusConfirmed:           seatOwned,
	StatusExpired:             seatNone,
	StatusRefundPending:       seatNone,
	StatusRefunded:            seatNone,
	StatusNeedsReconciliation: seatAmbiguous,
}

type seatUse int

const (
	seatNone seatUse = iota
	seatHeld
	seatOwned
	// seatAmbiguous: needs_reconciliation keeps whatever the purchase had
	// (a hold from checking_payment, nothing from refund_pending).
	seatAmbiguous
)

// CanTransition reports whether a purchase may move from one status to
// another. A status never "moves" to itself: an exact repeat is a no-op for
// the caller to recognise, not a transition.
func CanTransition(from, to Status) bool {
	_, ok := transitions[edge{from, to}]
	return ok
}

// SeatEffectOf returns what the transition from → to does to the seat
// counters, and false if the transition is not allowed.
func SeatEffectOf(from, to Status) (SeatEffect, bool) {
	e, ok := transitions[edge{from, to}]
	return e, ok
}

// SeatEffectBetween is the seat effect of a stored change from before to
// after, what a Store applies with it; false if the transition is not
// allowed. It is SeatEffectOf, except out of needs_reconciliation, which
// keeps whatever the purchase had: a purchase that no longer holds a seat
// (it came from refund_pending) releases nothing, and cannot take a seat
// it does not hold.
func SeatEffectBetween(before, after Purchase) (SeatEffect, bool) {
	e, ok := SeatEffectOf(before.status, after.status)
	if !ok || before.status != StatusNeedsReconciliation || before.HoldsSeat() {
		return e, ok
	}
	if e == SeatTaken {
		return SeatUnchanged, false
	}
	return SeatUnchanged, true
}

// Final reports whether no transition leaves s.
func (s Status) Final() bool {
	for e := range transitions {
		if e.from == s {
			return false
		}
	}
	return true
}

// ErrInvalidTransition is matched (errors.Is) by every *TransitionError.
var ErrInvalidTransition = errors.New("invalid purchase status transition")

// TransitionError is a refused transition: a stale or out-of-order step.
type TransitionError struct {
	From, To Status
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("purchase cannot go from %s to %s", e.From, e.To)
}

// Is makes errors.Is(err, ErrInvalidTransition) match.
func (e *TransitionError) Is(target error) bool { return target == ErrInvalidTransition }
