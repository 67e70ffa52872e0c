package purchase

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/webhooksig"
)

// Webhook event types of the provider (docs/principles.md §7.2).
const (
	EventPaymentSucceeded = "payment.succeeded"
	EventPaymentFailed    = "payment.failed"
	EventRefundSucceeded  = "refund.succeeded"
	EventRefundFailed     = "refund.failed"
)

// Errors of Webhooks.Handle, for the HTTP edge.
var (
	// ErrWebhookUnauthenticated: a missing or wrong signature, or a
	// timestamp outside the tolerance (401). Nothing was read or changed.
	ErrWebhookUnauthenticated = errors.New("webhook signature rejected")
	// ErrWebhookMalformed: an authentic body that is not a webhook event
	// (400).
	ErrWebhookMalformed = errors.New("malformed webhook event")
	// ErrUnknownPayment: the event names no purchase of ours, or a payment
	// or refund other than the purchase's (404). It matches club.ErrNotFound.
	ErrUnknownPayment = fmt.Errorf("payment %w", club.ErrNotFound)
)

// WebhookEvent is the body the provider signs and sends.
type WebhookEvent struct {
	EventID   string `json:"event_id"`
	Type      string `json:"type"`
	PaymentID string `json:"payment_id"`
	RefundID  string `json:"refund_id,omitempty"`
	// Reference is the purchase id the payment was created with.
	Reference   string `json:"reference"`
	AmountCents int64  `json:"amount_cents"`
}

// WebhookOutcome says what handling an event did, for logs and tests.
type WebhookOutcome string

const (
	// OutcomeCallbackSent: the saga's wait was completed (or failed) with
	// the stored task token.
	OutcomeCallbackSent WebhookOutcome = "callback_sent"
	// OutcomeRecorded: what the provider said was recorded on the purchase;
	// the saga will act on it (it was not waiting, or its wait had ended).
	OutcomeRecorded WebhookOutcome = "recorded"
	// OutcomeLatePayment: a payment for an expired purchase: the refund
	// intent was recorded with the refund.requested outbox row that starts
	// the refund execution.
	OutcomeLatePayment WebhookOutcome = "late_payment_refund"
	// OutcomeRefunded: the provider confirmed the refund.
	OutcomeRefunded WebhookOutcome = "refunded"
	// OutcomeUnchanged: the event told nothing new (a duplicate, or news
	// the purchase is already past); nothing changed.
	OutcomeUnchanged WebhookOutcome = "unchanged"
	// OutcomeIgnored: an event type this build does not act on.
	OutcomeIgnored WebhookOutcome = "ignored"
)

// WebhookResult is the result of Webhooks.Handle.
type WebhookResult struct {
	Event   WebhookEvent
	Outcome WebhookOutcome
	Status  Status // the purchase's status afterwards
}

// WebhooksDeps are the collaborators of Webhooks.
type WebhooksDeps struct {
	// Secret is the provider's shared HMAC key, read from the SSM parameter
	// named by PAYMENT_WEBHOOK_SECRET_PARAMETER (see functions/api).
	Secret []byte
	// Tolerance is how old a signature may be; webhooksig.DefaultTolerance
	// (5 minutes) if zero.
	Tolerance time.Duration
	Store     Store
	Callbacks TaskCallbacks
	// Now defaults to the wall clock.
	Now func() time.Time
}

// Webhooks applies the payment provider's notifications to purchases. It
// changes a purchase only through Store.Update, so each notification is
// applied atomically and idempotently: a duplicate (same event_id, or the
// same news in another event) finds the purchase already where it would
// take it and changes nothing; its follow-up call (a task callback) is safe
// to repeat. Handle answers an error
// only when the provider should retry (an infrastructure failure) or when
// the request is not an authentic event about one of our payments. Webhooks
// is safe for concurrent use.
type Webhooks struct {
	secret    []byte
	tolerance time.Duration
	store     Store
	callbacks TaskCallbacks
	now       func() time.Time
}

// NewWebhooks checks d and returns Webhooks.
func NewWebhooks(d WebhooksDeps) (*Webhooks, error) {
	var errs []error
	if len(d.Secret) == 0 {
		errs = append(errs, errors.New("purchase webhooks: Secret is required"))
	}
	if d.Store == nil {
		errs = append(errs, errors.New("purchase webhooks: Store is required"))
	}
	if d.Callbacks == nil {
		errs = append(errs, errors.New("purchase webhooks: Callbacks is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	w := &Webhooks{secret: d.Secret, tolerance: d.Tolerance, store: d.Store, callbacks: d.Callbacks, now: d.Now}
	if w.now == nil {
		w.now = func() time.Time { return time.Now().UTC() }
	}
	return w, nil
}

// Handle verifies the signature header (X-Sandbox-Signature) of body and
// applies the event. Errors: ErrWebhookUnauthenticated (401),
// ErrWebhookMalformed (400), ErrUnknownPayment (404), or an
// infrastructure error (5xx: the provider retries the same event).
//
// What each event does:
//
//   - payment.succeeded: recorded on the purchase. If the saga waits for it
//     (payment_pending with a stored token), SendTaskSuccess completes the
//     wait. If the purchase expired, it is a late payment: the refund
//     intent is recorded with the observation and a refund.requested outbox
//     row, in one transaction (expired → refund_pending, seat counters
//     unchanged): the relay, or the sweeper if the relay fails, starts the
//     refund execution <id>-refund from that row.
//   - payment.failed: recorded; a waiting saga gets SendTaskFailure
//     (PaymentFailed) and expires the purchase.
//   - refund.succeeded: the refund is recorded and the purchase refunded.
//   - refund.failed: recorded; the saga's refund check reports it.
func (w *Webhooks) Handle(ctx context.Context, signature string, body []byte) (WebhookResult, error) {
	if err := webhooksig.Verify(w.secret, signature, body, w.now(), w.tolerance); err != nil {
		return WebhookResult{}, fmt.Errorf("%w: %w", ErrWebhookUnauthenticated, err)
	}
	ev, err := decodeEvent(body)
	if err != nil {
		return WebhookResult{}, err
	}
	res := WebhookResult{Event: ev}
	switch ev.Type {
	case EventPaymentSucceeded, EventPaymentFailed:
		return w.payment(ctx, res)
	case EventRefundSucceeded, EventRefundFailed:
		return w.refund(ctx, res)
	default:
		// Providers add event types; one we do not know is not an error.
		res.Outcome = OutcomeIgnored
		return res, nil
	}
}

func decodeEvent(body []byte) (WebhookEvent, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var ev WebhookEvent
	if err := dec.Decode(&ev); err != nil {
		return WebhookEvent{}, fmt.Errorf("%w: %v", ErrWebhookMalformed, err)
	}
	switch {
	case ev.EventID == "":
		return WebhookEvent{}, fmt.Errorf("%w: missing event_id", ErrWebhookMalformed)
	case ev.Type == "":
		return WebhookEvent{}, fmt.Errorf("%w: missing type", ErrWebhookMalformed)
	case ev.PaymentID == "":
		return WebhookEvent{}, fmt.Errorf("%w: missing payment_id", ErrWebhookMalformed)
	}
	return ev, nil
}

// update applies change to the purchase the event references, classifying
// "not ours" as ErrUnknownPayment.
func (w *Webhooks) update(ctx context.Context, ev WebhookEvent, change func(*Purchase) error) (before, after Purchase, err error) {
	if ev.Reference == "" {
		return Purchase{}, Purchase{}, fmt.Errorf("event %s: no reference: %w", ev.EventID, ErrUnknownPayment)
	}
	after, err = w.store.Update(ctx, ev.Reference, func(p *Purchase) error {
		before = FromSnapshot(p.Snapshot()) // a copy: change may append to p's history
		return change(p)
	})
	switch {
	case errors.Is(err, club.ErrNotFound), errors.Is(err, ErrPaymentMismatch):
		return Purchase{}, Purchase{}, fmt.Errorf("event %s for purchase %q: %w: %w", ev.EventID, ev.Reference, ErrUnknownPayment, err)
	case err != nil:
		return Purchase{}, Purchase{}, fmt.Errorf("event %s: %w", ev.EventID, err)
	}
	return before, after, nil
}

func (w *Webhooks) payment(ctx context.Context, res WebhookResult) (WebhookResult, error) {
	ev := res.Event
	status := ProviderSucceeded
	if ev.Type == EventPaymentFailed {
		status = ProviderFailed
	}
	before, after, err := w.update(ctx, ev, func(p *Purchase) error {
		if err := p.ObservePayment(ev.PaymentID, status); err != nil {
			return err
		}
		if status == ProviderSucceeded && p.Status() == StatusExpired {
			// Never treat a late success as proof the hold is alive: the
			// seat may be sold. The intent to refund is recorded with the
			// observation, in the same write.
			return p.BeginRefund("late payment: "+ev.PaymentID+" succeeded after the hold expired", w.now())
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	res.Status, res.Outcome = after.Status(), OutcomeUnchanged
	if !before.Equal(after) {
		res.Outcome = OutcomeRecorded
	}

	switch {
	case after.Status() == StatusPaymentPending && after.TaskToken() != "":
		if status == ProviderSucceeded {
			err = w.callbacks.SendTaskSuccess(ctx, after.TaskToken(), SucceededOutput())
		} else {
			err = w.callbacks.SendTaskFailure(ctx, after.TaskToken(), TaskErrorPaymentFailed, "the provider reported payment "+ev.PaymentID+" failed")
		}
		switch {
		case errors.Is(err, ErrTaskClosed):
			// The wait ended (its deadline passed): the saga checks the
			// provider, which now says the same.
		case err != nil:
			return res, fmt.Errorf("event %s: complete the saga's wait: %w", ev.EventID, err)
		default:
			res.Outcome = OutcomeCallbackSent
		}
	case after.Status() == StatusRefundPending && before.Status() == StatusExpired:
		// The refund.requested row committed with the intent: the relay
		// owns starting the refund from here.
		res.Outcome = OutcomeLatePayment
	}
	return res, nil
}

func (w *Webhooks) refund(ctx context.Context, res WebhookResult) (WebhookResult, error) {
	ev := res.Event
	if ev.RefundID == "" {
		return res, fmt.Errorf("%w: %s without refund_id", ErrWebhookMalformed, ev.Type)
	}
	status := ProviderSucceeded
	if ev.Type == EventRefundFailed {
		status = ProviderFailed
	}
	before, after, err := w.update(ctx, ev, func(p *Purchase) error {
		if p.PaymentID() != ev.PaymentID {
			return fmt.Errorf("refund %s is for payment %s: %w", ev.RefundID, ev.PaymentID, ErrPaymentMismatch)
		}
		if !p.RefundRequested() {
			return fmt.Errorf("no refund was requested for purchase %s: %w", p.ID(), ErrPaymentMismatch)
		}
		if err := p.RecordRefund(ev.RefundID, status); err != nil {
			return err
		}
		if p.RefundStatus() == ProviderSucceeded {
			return p.MarkRefunded(w.now())
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	res.Status, res.Outcome = after.Status(), OutcomeUnchanged
	switch {
	case before.Equal(after):
	case after.Status() == StatusRefunded:
		res.Outcome = OutcomeRefunded
	default:
		res.Outcome = OutcomeRecorded
	}
	return res, nil
}
