package purchase

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/clubdev/club/internal/fault"
)

// StepsDeps are the collaborators of Steps.
type StepsDeps struct {
	Store    Store
	Payments PaymentProvider
	// Callbacks lets the wait step complete its own task when the webhook
	// arrived before the task token was stored.
	Callbacks TaskCallbacks
	// Now defaults to the wall clock (UTC).
	Now func() time.Time
}

// Steps are the saga's task steps (statemachines/purchase.asl.json), one
// method per Task state. The state machine owns the order; each step checks
// that the purchase is where the step applies and otherwise returns
// ErrStaleStep without changing anything, so a re-run of an old handler, a
// retried Lambda invocation or a step racing a webhook is harmless. Every
// step is idempotent: provider calls carry the purchase's stable keys and
// status changes are conditional transitions (an exact repeat is a no-op).
//
// Errors are classified with the sentinels of this package; the task
// function maps them to the error type names the state machine's Retry and
// Catch match. Steps is safe for concurrent use.
type Steps struct {
	store     Store
	payments  PaymentProvider
	callbacks TaskCallbacks
	now       func() time.Time
}

// NewSteps checks d and returns Steps.
func NewSteps(d StepsDeps) (*Steps, error) {
	var errs []error
	if d.Store == nil {
		errs = append(errs, errors.New("purchase steps: Store is required"))
	}
	if d.Payments == nil {
		errs = append(errs, errors.New("purchase steps: Payments is required"))
	}
	if d.Callbacks == nil {
		errs = append(errs, errors.New("purchase steps: Callbacks is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s := &Steps{store: d.Store, payments: d.Payments, callbacks: d.Callbacks, now: d.Now}
	if s.now == nil {
		s.now = func() time.Time { return time.Now().UTC() }
	}
	return s, nil
}

// HoldState is the result of Hold.
type HoldState struct {
	HoldExpiresAt time.Time `json:"hold_expires_at"`
}

// Hold checks that the purchase still holds its seat (the create
// transaction took it): reserved and before the deadline. A saga started
// late (the relay was down past the deadline) gets ErrHoldExpired and
// expires the purchase.
func (s *Steps) Hold(ctx context.Context, id string) (HoldState, error) {
	p, err := s.store.Get(ctx, id)
	if err != nil {
		return HoldState{}, fmt.Errorf("hold %s: %w", id, err)
	}
	if p.Status() != StatusReserved {
		return HoldState{}, fmt.Errorf("hold %s: purchase is %s: %w", id, p.Status(), ErrStaleStep)
	}
	if p.HoldExpired(s.now()) {
		return HoldState{}, fmt.Errorf("hold %s: expired at %s: %w", id, p.HoldExpiresAt().Format(time.RFC3339), ErrHoldExpired)
	}
	return HoldState{HoldExpiresAt: p.HoldExpiresAt()}, nil
}

// PaymentRequested is the result of RequestPayment.
type PaymentRequested struct {
	PaymentID string `json:"payment_id"`
	// WaitSeconds is how long the saga may wait for the webhook: the time
	// left until the hold deadline, rounded up, at least 1 (the state
	// machine's TimeoutSecondsPath needs a positive integer).
	WaitSeconds int64 `json:"wait_seconds"`
}

// RequestPayment asks the provider for the payment under the purchase's
// stable key and records it (reserved → payment_pending). A repeat returns
// the recorded payment. No request is sent at or past the purchase's
// PaymentRequestCutoff, and the call is given only the time left until
// it, so a checkout URL always leaves the student a tenth of the hold.
// Errors: ErrHoldExpired (too late to ask),
// ErrPaymentUnknown (retry: the same key finds the payment if it exists),
// ErrProviderUnavailable (retry later), ErrPaymentRejected, ErrStaleStep.
func (s *Steps) RequestPayment(ctx context.Context, id string) (PaymentRequested, error) {
	p, err := s.store.Get(ctx, id)
	if err != nil {
		return PaymentRequested{}, fmt.Errorf("request payment %s: %w", id, err)
	}
	switch p.Status() {
	case StatusPaymentPending:
		return s.paymentRequested(p), nil
	case StatusReserved, StatusAwaitingProvider:
	default:
		return PaymentRequested{}, fmt.Errorf("request payment %s: purchase is %s: %w", id, p.Status(), ErrStaleStep)
	}
	left := p.PaymentRequestCutoff().Sub(s.now())
	if left <= 0 {
		what := "no payment requested"
		if p.Status() == StatusAwaitingProvider {
			what = "the payment provider did not answer"
		}
		return PaymentRequested{}, fmt.Errorf("request payment %s: %s by %s, a tenth of the hold before its deadline: %w",
			id, what, p.PaymentRequestCutoff().Format(time.RFC3339), ErrHoldExpired)
	}
	// An answer that comes after the cutoff is not waited for: it is
	// unknown, and the saga expires the purchase.
	callCtx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	pay, err := s.payments.CreatePayment(callCtx, p.PaymentKey(), PaymentRequest{
		AmountCents: p.Price().AmountCents, Currency: p.Price().Currency, Reference: p.ID(),
	})
	if err != nil {
		return PaymentRequested{}, fmt.Errorf("request payment %s: %w", id, classifyProvider(err, ErrPaymentUnknown, ErrPaymentRejected))
	}
	stored, err := s.store.Update(ctx, id, func(p *Purchase) error {
		return p.RecordPayment(pay.ID, pay.CheckoutURL, pay.Status, s.now())
	})
	if err != nil {
		return PaymentRequested{}, stale(fmt.Errorf("request payment %s: record: %w", id, err))
	}
	return s.paymentRequested(stored), nil
}

// ProviderWait is the result of WaitForProvider: how long the saga waits
// before it asks again, and how many times it has waited.
type ProviderWait struct {
	Attempt     int   `json:"attempt"`
	WaitSeconds int64 `json:"wait_seconds"`
}

// Bounds of the backoff between requests to a silent provider; see
// providerDelay.
const (
	minProviderDelay = time.Second
	maxProviderDelay = time.Minute
)

// providerDelay is the wait before the attempt-th repeat of a payment
// request: doubling from a fifteenth of the cap, capped at a thirtieth of
// the hold (30 s for the default 15-minute hold), never below a second nor
// above a minute.
func providerDelay(hold time.Duration, attempt int) time.Duration {
	ceiling := min(max(hold/30, minProviderDelay), maxProviderDelay)
	d := max(ceiling/15, minProviderDelay)
	for range min(attempt, 16) {
		d *= 2
	}
	return min(d, ceiling)
}

// WaitForProvider runs after a request for the payment got no answer
// (cause says what it got): the purchase shows awaiting_provider and the
// saga is told how long to wait before asking again with the same key, in
// whole seconds, ending before the purchase's PaymentRequestCutoff when a
// whole second still fits, so that the last request is sent before it (and
// RequestPayment refuses one at or past it). At or past the cutoff it
// returns ErrHoldExpired: nobody was shown a checkout URL, so nobody can
// have paid, and the saga expires the purchase (a payment made anyway is a
// late payment and is refunded). ErrStaleStep unless reserved or
// awaiting_provider.
func (s *Steps) WaitForProvider(ctx context.Context, id string, attempt int, cause string) (ProviderWait, error) {
	now := s.now()
	var cutoff time.Time
	var hold time.Duration
	_, err := s.store.Update(ctx, id, func(p *Purchase) error {
		if p.Status() != StatusReserved && p.Status() != StatusAwaitingProvider {
			return fmt.Errorf("purchase is %s: %w", p.Status(), ErrStaleStep)
		}
		cutoff, hold = p.PaymentRequestCutoff(), p.HoldExpiresAt().Sub(p.CreatedAt())
		if !now.Before(cutoff) {
			return fmt.Errorf("the payment provider did not answer by %s, a tenth of the hold before its deadline: %w",
				cutoff.Format(time.RFC3339), ErrHoldExpired)
		}
		note := "waiting for the payment provider to answer"
		if cause != "" {
			note += " (" + cause + ")"
		}
		return p.AwaitProvider(note, now)
	})
	if err != nil {
		return ProviderWait{}, stale(fmt.Errorf("wait for provider %s: %w", id, err))
	}
	return ProviderWait{Attempt: attempt + 1, WaitSeconds: waitSeconds(providerDelay(hold, attempt), cutoff.Sub(now))}, nil
}

// waitSeconds is delay in whole seconds, rounded up, unless that reaches
// left (the time to the cutoff): then the most whole seconds that end
// before it. With a second or less left, 1: the cutoff passes during the
// wait, the next RequestPayment sends nothing and the saga expires the
// purchase. Never below 1: the Wait state needs a positive integer.
func waitSeconds(delay, left time.Duration) int64 {
	secs := max(int64((delay+time.Second-1)/time.Second), 1)
	switch {
	case time.Duration(secs)*time.Second < left:
		return secs
	case left > time.Second:
		return int64((left+time.Second-1)/time.Second) - 1
	default:
		return 1
	}
}

func (s *Steps) paymentRequested(p Purchase) PaymentRequested {
	left := p.HoldExpiresAt().Sub(s.now())
	secs := int64((left + time.Second - 1) / time.Second)
	return PaymentRequested{PaymentID: p.PaymentID(), WaitSeconds: max(secs, 1)}
}

// PaymentOutcome is what the saga learned about the payment: the output of
// CheckPayment and of the webhook's SendTaskSuccess alike, so that one
// Choice state reads both.
type PaymentOutcome struct {
	PaymentStatus ProviderStatus `json:"payment_status"`
}

// SucceededOutput is the task output a webhook sends with SendTaskSuccess.
func SucceededOutput() string {
	b, _ := json.Marshal(PaymentOutcome{PaymentStatus: ProviderSucceeded}) // a struct of strings always encodes
	return string(b)
}

// AwaitPayment stores the token of the saga's wait on the purchase, where
// the webhook handler finds it. If the webhook came first (it found no
// token and only recorded what it saw), the step completes its own task
// with what was recorded: whichever of the two comes second sends the
// callback, so none is lost. ErrStaleStep unless payment_pending.
func (s *Steps) AwaitPayment(ctx context.Context, id, token string) error {
	stored, err := s.store.Update(ctx, id, func(p *Purchase) error { return p.AttachTaskToken(token) })
	if err != nil {
		return stale(fmt.Errorf("await payment %s: %w", id, err))
	}
	switch stored.PaymentStatus() {
	case ProviderSucceeded:
		err = s.callbacks.SendTaskSuccess(ctx, token, SucceededOutput())
	case ProviderFailed:
		err = s.callbacks.SendTaskFailure(ctx, token, TaskErrorPaymentFailed, "the provider reported the payment failed")
	}
	if err != nil && !errors.Is(err, ErrTaskClosed) {
		return fmt.Errorf("await payment %s: complete own task: %w", id, err)
	}
	return nil
}

// StartChecking records that the deadline passed without a webhook
// (payment_pending → checking_payment): from now on the saga owns asking
// the provider, with bounded backoff.
func (s *Steps) StartChecking(ctx context.Context, id string) error {
	if _, err := s.store.Update(ctx, id, func(p *Purchase) error { return p.StartChecking(s.now()) }); err != nil {
		return stale(fmt.Errorf("start checking %s: %w", id, err))
	}
	return nil
}

// CheckPayment asks the provider for the payment's status and records it.
// The result is the most final status known (a webhook may have said more
// than a lagging read). Errors: ErrPaymentUnknown (retry with backoff;
// after the bound the saga needs reconciliation, never compensation),
// ErrPaymentRejected (the provider does not know the payment), ErrStaleStep.
func (s *Steps) CheckPayment(ctx context.Context, id string) (PaymentOutcome, error) {
	p, err := s.store.Get(ctx, id)
	if err != nil {
		return PaymentOutcome{}, fmt.Errorf("check payment %s: %w", id, err)
	}
	if p.Status() != StatusCheckingPayment {
		return PaymentOutcome{}, fmt.Errorf("check payment %s: purchase is %s: %w", id, p.Status(), ErrStaleStep)
	}
	pay, err := s.payments.GetPayment(ctx, p.PaymentID())
	if err != nil {
		return PaymentOutcome{}, fmt.Errorf("check payment %s: %w", id, classifyProvider(err, ErrPaymentUnknown, ErrPaymentRejected))
	}
	stored, err := s.store.Update(ctx, id, func(p *Purchase) error { return p.ObservePayment(pay.ID, pay.Status) })
	if err != nil {
		return PaymentOutcome{}, fmt.Errorf("check payment %s: record: %w", id, err)
	}
	return PaymentOutcome{PaymentStatus: stored.PaymentStatus()}, nil
}

// Grant turns the held seat into a taken one, records the student's access
// and confirms the purchase, in one transaction. Errors: ErrGrantFailed
// (the student already has access: refund), ErrStaleStep.
func (s *Steps) Grant(ctx context.Context, id string) error {
	_, err := s.store.Update(ctx, id, func(p *Purchase) error { return p.Confirm(s.now()) })
	if errors.Is(err, ErrAlreadyHasAccess) {
		return fmt.Errorf("grant %s: %w: %w", id, ErrGrantFailed, err)
	}
	if err != nil {
		return stale(fmt.Errorf("grant %s: %w", id, err))
	}
	return nil
}

// Expire releases the hold (→ expired). It refuses with
// ErrPaymentSucceeded if a succeeded payment was observed meanwhile: the
// saga grants access instead.
func (s *Steps) Expire(ctx context.Context, id, note string) error {
	if _, err := s.store.Update(ctx, id, func(p *Purchase) error { return p.Expire(note, s.now()) }); err != nil {
		return stale(fmt.Errorf("expire %s: %w", id, err))
	}
	return nil
}

// BeginRefund records the refund intent (→ refund_pending) after access
// could not be granted; the hold is released in the same transaction.
func (s *Steps) BeginRefund(ctx context.Context, id, note string) error {
	if _, err := s.store.Update(ctx, id, func(p *Purchase) error { return p.BeginRefund(note, s.now()) }); err != nil {
		return stale(fmt.Errorf("begin refund %s: %w", id, err))
	}
	return nil
}

// RefundState is the result of Refund.
type RefundState struct {
	RefundID     string         `json:"refund_id"`
	RefundStatus ProviderStatus `json:"refund_status"`
}

// Refund asks the provider to refund the payment under the key of the
// purchase's current refund attempt (recorded with the refund intent,
// before this call) and records the refund; if the provider says it
// succeeded already, the purchase is refunded. Calling it again asks again
// with the same key and gets the same refund: a crash after the provider
// accepted it still makes exactly one refund. Errors: ErrRefundUnknown and
// ErrProviderUnavailable (retry), ErrRefundRejected, ErrStaleStep.
func (s *Steps) Refund(ctx context.Context, id string) (RefundState, error) {
	p, err := s.store.Get(ctx, id)
	if err != nil {
		return RefundState{}, fmt.Errorf("refund %s: %w", id, err)
	}
	switch p.Status() {
	case StatusRefunded:
		return RefundState{RefundID: p.RefundID(), RefundStatus: p.RefundStatus()}, nil
	case StatusRefundPending:
	default:
		return RefundState{}, fmt.Errorf("refund %s: purchase is %s: %w", id, p.Status(), ErrStaleStep)
	}
	if p.RefundKey() == "" {
		return RefundState{}, fmt.Errorf("refund %s: no refund attempt recorded: %w", id, ErrStaleStep)
	}
	rf, err := s.payments.CreateRefund(ctx, p.RefundKey(), p.PaymentID())
	if err != nil {
		return RefundState{}, fmt.Errorf("refund %s: %w", id, classifyProvider(err, ErrRefundUnknown, ErrRefundRejected))
	}
	// The provider holds the refund; the purchase does not say so yet.
	if err := fault.Inject(ctx, fault.SagaAfterRefundAccepted, id); err != nil {
		return RefundState{}, fmt.Errorf("refund %s: %w", id, err)
	}
	stored, err := s.recordRefund(ctx, id, rf)
	if err != nil {
		return RefundState{}, fmt.Errorf("refund %s: %w", id, err)
	}
	return RefundState{RefundID: stored.RefundID(), RefundStatus: stored.RefundStatus()}, nil
}

// CheckRefund reads the refund's status and records it: succeeded makes
// the purchase refunded. Errors: ErrRefundPending and ErrRefundUnknown
// (retry with backoff), ErrRefundFailed (a person must act),
// ErrRefundRejected, ErrStaleStep.
func (s *Steps) CheckRefund(ctx context.Context, id string) error {
	p, err := s.store.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("check refund %s: %w", id, err)
	}
	switch {
	case p.Status() == StatusRefunded:
		return nil
	case p.Status() != StatusRefundPending:
		return fmt.Errorf("check refund %s: purchase is %s: %w", id, p.Status(), ErrStaleStep)
	case p.RefundID() == "":
		return fmt.Errorf("check refund %s: no refund requested yet: %w", id, ErrStaleStep)
	}
	rf, err := s.payments.GetRefund(ctx, p.RefundID())
	if err != nil {
		return fmt.Errorf("check refund %s: %w", id, classifyProvider(err, ErrRefundUnknown, ErrRefundRejected))
	}
	stored, err := s.recordRefund(ctx, id, rf)
	if err != nil {
		return fmt.Errorf("check refund %s: %w", id, err)
	}
	switch stored.RefundStatus() {
	case ProviderSucceeded:
		return nil
	case ProviderFailed:
		return fmt.Errorf("check refund %s: refund %s (key %s): %w; clubctl reconcile resolve --action refund asks again under a new key",
			id, stored.RefundID(), stored.RefundKey(), ErrRefundFailed)
	default:
		return fmt.Errorf("check refund %s: refund %s: %w", id, stored.RefundID(), ErrRefundPending)
	}
}

func (s *Steps) recordRefund(ctx context.Context, id string, rf ProviderRefund) (Purchase, error) {
	stored, err := s.store.Update(ctx, id, func(p *Purchase) error {
		if err := p.RecordRefund(rf.ID, rf.Status); err != nil {
			return err
		}
		if p.RefundStatus() == ProviderSucceeded {
			return p.MarkRefunded(s.now())
		}
		return nil
	})
	if err != nil {
		return Purchase{}, stale(fmt.Errorf("record refund %s: %w", rf.ID, err))
	}
	return stored, nil
}

// NeedReconciliation records that the saga gave up without a definite
// result (→ needs_reconciliation). The note says what is unknown.
func (s *Steps) NeedReconciliation(ctx context.Context, id, note string) error {
	if _, err := s.store.Update(ctx, id, func(p *Purchase) error { return p.NeedReconciliation(note, s.now()) }); err != nil {
		return stale(fmt.Errorf("needs reconciliation %s: %w", id, err))
	}
	return nil
}

// classifyProvider maps a provider error to the step's vocabulary: unknown
// (retry with the same key), unavailable (retry later) or rejected.
// Anything else (a bug) is returned as is.
func classifyProvider(err, unknown, rejected error) error {
	switch {
	case errors.Is(err, ErrProviderCallUnknown):
		return fmt.Errorf("%w: %w", unknown, err)
	case errors.Is(err, ErrProviderCallUnavailable):
		return fmt.Errorf("%w: %w", ErrProviderUnavailable, err)
	case errors.Is(err, ErrProviderCallRejected):
		return fmt.Errorf("%w: %w", rejected, err)
	}
	return err
}

// stale marks a refused transition as a stale step (the purchase moved
// on); other errors pass unchanged.
func stale(err error) error {
	if errors.Is(err, ErrInvalidTransition) && !errors.Is(err, ErrStaleStep) {
		return fmt.Errorf("%w: %w", ErrStaleStep, err)
	}
	return err
}
