package purchase

import (
	"errors"
	"fmt"

	"github.com/clubdev/club/internal/club"
)

// Errors of the purchase use cases, classified once here and mapped at each
// edge: the HTTP API to a status and code, the saga's task function to a
// named error type that the state machine's Retry and Catch match.
var (
	// ErrIntensiveNotFound: the intensive does not exist (404
	// intensive_not_found). It matches club.ErrNotFound too.
	ErrIntensiveNotFound = fmt.Errorf("intensive %w", club.ErrNotFound)
	// ErrIntensiveFull: every seat is taken or held by another purchase
	// (409 intensive_full). A held seat may come back when its hold expires.
	ErrIntensiveFull = errors.New("every seat of the intensive is taken or held")

	// ErrStaleStep: a saga step found the purchase past the point where the
	// step applies (a re-run of an old handler, a step racing a webhook). It
	// changed nothing. Step Functions error type: StaleStep.
	ErrStaleStep = errors.New("stale saga step")
	// ErrHoldExpired: the hold deadline passed before the step could act;
	// the saga expires the purchase. Error type: HoldExpired.
	ErrHoldExpired = errors.New("the hold has expired")
	// ErrPaymentUnknown: the provider's answer is unknown (timeout,
	// transport error, 5xx): the payment may or may not exist or have
	// succeeded. Retried with the same key; never a reason to compensate.
	// Error type: PaymentUnknown.
	ErrPaymentUnknown = errors.New("payment result unknown")
	// ErrPaymentRejected: the provider definitively refused to create the
	// payment (4xx). Error type: PaymentRejected.
	ErrPaymentRejected = errors.New("payment rejected by the provider")
	// ErrProviderUnavailable: the provider answered that it cannot act now
	// and did nothing (429, 503 refund_unavailable); retry later. Error
	// type: ProviderUnavailable.
	ErrProviderUnavailable = errors.New("payment provider unavailable")
	// ErrPaymentSucceeded: the saga was about to expire the purchase, but a
	// succeeded payment was observed meanwhile (a webhook racing the
	// deadline) while the seat is still held: the saga grants access
	// instead. Error type: PaymentSucceeded.
	ErrPaymentSucceeded = errors.New("the payment has succeeded")
	// ErrGrantFailed: the paid purchase cannot be granted access, for good
	// (the student already has access through another purchase). The saga
	// refunds. Error type: GrantFailed.
	ErrGrantFailed = errors.New("access cannot be granted")
	// ErrRefundUnknown: the refund request's result is unknown; retried with
	// the same key. Error type: RefundUnknown.
	ErrRefundUnknown = errors.New("refund result unknown")
	// ErrRefundPending: the provider accepted the refund and has not
	// completed it yet. Error type: RefundPending.
	ErrRefundPending = errors.New("refund not completed yet")
	// ErrRefundFailed: the provider reports the refund failed; a person must
	// act. Error type: RefundFailed.
	ErrRefundFailed = errors.New("refund failed at the provider")
	// ErrRefundRejected: the provider definitively refused the refund
	// request (4xx). Error type: RefundRejected.
	ErrRefundRejected = errors.New("refund rejected by the provider")

	// ErrPaymentMismatch: a provider notification names a payment other
	// than the one recorded on the purchase.
	ErrPaymentMismatch = errors.New("the payment does not belong to this purchase")

	// ErrNotReconcilable: a person's resolution names a purchase that is not
	// in needs_reconciliation (the saga or a webhook settled it, or another
	// resolution came first). Nothing changed.
	ErrNotReconcilable = errors.New("the purchase does not need reconciliation")
	// ErrContradicted: the resolution contradicts what the provider said
	// and the purchase recorded (release after a succeeded payment, confirm
	// without one, refund of a failed one). Refused unless forced.
	ErrContradicted = errors.New("the provider's recorded answer contradicts this action")
	// ErrNoHold: confirm or release of a purchase that no longer holds a
	// seat (it was released when a refund began). Refund it instead.
	ErrNoHold = errors.New("the purchase holds no seat")
)
