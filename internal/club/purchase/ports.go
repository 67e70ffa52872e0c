package purchase

import (
	"context"
	"errors"
	"fmt"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/idempotency"
)

// IntensiveRepository stores intensives. Their seat counters change only in
// the transactions of Store, never through this port.
type IntensiveRepository interface {
	// Create stores a new intensive; an existing id is an error.
	Create(ctx context.Context, in Intensive) error
	// Get returns an intensive with its counters as committed (strongly
	// consistent), or ErrIntensiveNotFound.
	Get(ctx context.Context, id string) (Intensive, error)
}

// Creation is everything the create-purchase transaction writes.
type Creation struct {
	Purchase    Purchase        // reserved
	Event       events.Envelope // purchase.requested, for the outbox
	Idempotency idempotency.Record
}

// ErrAlreadyHasAccess is returned by Store.Update when a SeatTaken change
// finds that the student already has access to the intensive (through an
// earlier purchase): access is granted once per student.
var ErrAlreadyHasAccess = errors.New("the student already has access to the intensive")

// Store is the purchase's persistence port.
type Store interface {
	// Create commits c in one transaction: one seat of the intensive moves
	// from free to held (only if one is free: taken + held < capacity), the
	// purchase row, the outbox row of c.Event and the idempotency record
	// (only if caller and key are unused). On failure nothing is written and
	// the error is, by precedence: *idempotency.ExistsError (with the stored
	// record), ErrIntensiveNotFound, ErrIntensiveFull, club.ErrContention
	// (transient), or an infrastructure error.
	Create(ctx context.Context, c Creation) error
	// Get returns a purchase (strongly consistent) or club.ErrNotFound.
	Get(ctx context.Context, id string) (Purchase, error)
	// Update reads the purchase and calls change on it. If change returns an
	// error, nothing is written and the error is returned (wrapped). If
	// change left the purchase as it was (an exact repeat), nothing is
	// written either. Otherwise the result is written conditionally on the
	// purchase being unchanged since the read (so on its status being the
	// one the transition was allowed from), in one transaction with the
	// seat effect of its status change (SeatEffectBetween): SeatReleased gives
	// the held seat back, SeatTaken turns it into a taken seat and records
	// the student's access, failing with ErrAlreadyHasAccess (and writing
	// nothing) if the student already has it. A lost race re-reads and
	// calls change again, a bounded number of times (then
	// club.ErrContention), so change may run more than once and must depend
	// only on its argument. It returns the purchase as stored afterwards;
	// club.ErrNotFound for an unknown id.
	Update(ctx context.Context, id string, change func(*Purchase) error) (Purchase, error)
}

// PaymentProvider is the payment provider's API (docs/principles.md §7.2);
// *payment.Client implements it. Every error matches one of
// ErrProviderCallUnknown (the effect may have happened),
// ErrProviderCallUnavailable (it did not; retry later) and
// ErrProviderCallRejected (it did not; retrying cannot help).
type PaymentProvider interface {
	CreatePayment(ctx context.Context, idempotencyKey string, req PaymentRequest) (ProviderPayment, error)
	GetPayment(ctx context.Context, paymentID string) (ProviderPayment, error)
	CreateRefund(ctx context.Context, idempotencyKey, paymentID string) (ProviderRefund, error)
	GetRefund(ctx context.Context, refundID string) (ProviderRefund, error)
}

// ErrTaskClosed is what a TaskCallbacks adapter returns when the task of a
// token has already ended (Step Functions' TaskTimedOut, InvalidToken or
// TaskDoesNotExist): the saga has moved on, and the callback is moot.
var ErrTaskClosed = errors.New("the task of this token has already ended")

// TaskCallbacks completes the saga's wait for the payment webhook (the
// .waitForTaskToken task). Both calls are safe to repeat: a repeat gets
// ErrTaskClosed.
type TaskCallbacks interface {
	SendTaskSuccess(ctx context.Context, token, output string) error
	SendTaskFailure(ctx context.Context, token, errorName, cause string) error
}

// ExecutionName is the name of a purchase's saga execution. The relay
// starts it from purchase.requested (whose envelope is the input), so a
// republished event starts nothing new.
func ExecutionName(purchaseID string) string { return purchaseID }

// RefundExecutionName is the name of the execution that refunds a purchase
// outside its own saga (a late payment, a person's decision): the relay
// starts it from refund.requested, whose envelope is the input.
func RefundExecutionName(purchaseID string) string { return purchaseID + "-refund" }

// RefundRequestExecutionName is the execution a refund.requested row starts:
// RefundExecutionName for the purchase's first refund intent, and
// <id>-refund-<n> for the n-th (execution names cannot be reused).
func RefundRequestExecutionName(r events.RefundRequested) string {
	if r.Attempt <= 1 {
		return RefundExecutionName(r.PurchaseID)
	}
	return fmt.Sprintf("%s-%d", RefundExecutionName(r.PurchaseID), r.Attempt)
}

// Names of the errors a webhook sends into the saga with SendTaskFailure;
// the state machine catches them by name.
const TaskErrorPaymentFailed = "PaymentFailed"
