// Package purchase is the paid intensive and its purchase saga (docs/principles.md §1.16,
// §1.17, §6): a seat is held, the payment provider is asked for a payment,
// the saga waits for its webhook until the hold deadline, and then grants
// access, expires the hold, refunds, or hands the purchase to a person. A
// purchase cannot live in one transaction, so it is a sequence of
// transactions, each recorded as a business status on the purchase row.
//
// # Seats
//
// An [Intensive]'s seats are free, held or taken, and the three always add
// up to its capacity. Starting a purchase moves a seat from free to held in
// the same transaction that writes the purchase, its purchase.requested
// outbox row and the idempotency record ([Store.Create]), only if a seat is
// free: a full intensive (all seats taken or held) answers
// [ErrIntensiveFull]. Holds never exceed capacity, whatever the
// concurrency. Every later seat change rides on a status transition
// ([SeatEffectOf]): expiring releases the hold, confirming turns it into a
// taken seat and records the student's access (once per student), a refund
// for access that could not be granted releases it, and a late payment
// (after expiry) changes no counter at all: a seat is never added.
//
// # Statuses and transitions
//
// The statuses and the table of allowed transitions are in status.go
// ([CanTransition]). Every transition is a conditional write from the
// status it was allowed from, appended to the purchase's history
// ([Store.Update]). The [Purchase] methods make an exact repeat a no-op
// (a retried step, a duplicate webhook) and refuse anything else that the
// table does not allow with a [*TransitionError] (errors.Is
// [ErrInvalidTransition]); saga steps report it as [ErrStaleStep].
//
// # Money and keys
//
// The payment carries a stable idempotency key derived from the purchase
// ([PaymentKey]); no retry, by any process, makes a new one, so the
// provider makes at most one payment per purchase. Each refund attempt
// carries its own key ([RefundKey], refund-<id>-<n>), recorded on the
// purchase with the refund intent, before the provider is asked. A new
// attempt (a new key) is made only after the provider failed the last
// one's refund: a provider replays a reused key's first answer, so a
// failed refund can only be retried under a new key, and an attempt whose
// outcome is unknown or pending is asked for again under its own key. So
// at most one refund of the payment succeeds.
//
// A provider answer that is unknown (timeout, transport error, 5xx) is
// never taken as a failure: the saga asks again with the same key, and
// when its bounded attempts run out the purchase goes to
// needs_reconciliation, never straight to compensation.
//
// # The saga
//
// [Steps] are the task steps of statemachines/purchase.asl.json, run by
// functions/purchase-tasks; [Webhooks] applies the provider's signed
// notifications. The webhook and the saga's wait meet on the purchase row:
// the wait step stores its task token there and the webhook records what it
// saw; whichever comes second completes the wait (SendTaskSuccess or
// SendTaskFailure), so the order they arrive in does not matter. A late
// payment (a webhook for an expired purchase) records the refund intent
// together with the observation and a refund.requested event, which the
// Store writes to the outbox in the same transaction ([Purchase.Events]):
// the relay starts the refund execution from it ([RefundExecutionName]);
// the student sees refund_pending until the provider confirms. A purchase
// in needs_reconciliation is closed by a person ([Purchase.Resolve]).
//
// # Concurrency
//
// Service, Steps and Webhooks hold no state; correctness under concurrent
// steps, webhooks and requests comes from the store's conditional writes.
// The package imports no AWS code: the adapters are in internal/store
// (DynamoDB), internal/payment (the provider) and the Step Functions client
// of the function that wires them.
package purchase
