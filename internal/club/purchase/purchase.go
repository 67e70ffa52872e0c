package purchase

import (
	"fmt"
	"slices"
	"time"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
)

// ProviderStatus is the status of a payment or refund as the payment
// provider last reported it (docs/principles.md §7.2): pending, then succeeded or failed.
type ProviderStatus string

const (
	ProviderPending   ProviderStatus = "pending"
	ProviderSucceeded ProviderStatus = "succeeded"
	ProviderFailed    ProviderStatus = "failed"
)

// Final reports whether the provider will not change the status again.
func (s ProviderStatus) Final() bool { return s == ProviderSucceeded || s == ProviderFailed }

// HistoryEntry is one status the purchase entered, and when.
type HistoryEntry struct {
	Status Status
	At     time.Time
	// By and Reason are set when a person made the change (clubctl
	// reconcile resolve): who, and why.
	By     string
	Reason string
}

// PaymentKey is the idempotency key of the purchase's payment request. It is
// derived from the purchase, so every retry of the request, by any process,
// sends the same key and the provider creates one payment.
func PaymentKey(purchaseID string) string { return "pay-" + purchaseID }

// RefundKey is the idempotency key of the purchase's n-th refund attempt
// (from 1): the compensation is a new operation with its own stable key
// (docs/principles.md §1.16), and a refund the provider failed is asked for
// again under the next key, because a provider replays the first answer
// for a reused key.
func RefundKey(purchaseID string, attempt int) string {
	return fmt.Sprintf("refund-%s-%d", purchaseID, attempt)
}

// LegacyRefundKey is the one refund key of a purchase whose refund was
// recorded before refunds had attempts: a store reading such a row gives
// it one attempt under this key.
func LegacyRefundKey(purchaseID string) string { return "refund-" + purchaseID }

// RefundAttempt is one request to the provider to give the payment back.
// The key is recorded on the purchase before the provider is asked, so
// every retry, by any process, sends it; the attempt then keeps what the
// provider said, and a later attempt never overwrites it.
type RefundAttempt struct {
	// Key is the attempt's idempotency key (RefundKey).
	Key string
	// RefundID is the provider's refund, once known.
	RefundID string
	// Status is what the provider last said about it; empty until it
	// answered.
	Status ProviderStatus
	// RequestedAt is when the attempt was recorded.
	RequestedAt time.Time
}

// Purchase is one student's attempt to buy a seat of an intensive: the
// business status of the saga (docs/principles.md §6) and what it knows about the money.
// Its methods enforce the transition table; each is a no-op when the
// purchase is already where the method would take it (an exact repeat), so
// a retried step or a duplicate webhook changes nothing.
type Purchase struct {
	id            string
	intensiveID   string
	studentID     string
	price         Price
	status        Status
	createdAt     time.Time
	holdExpiresAt time.Time

	paymentID     string
	checkoutURL   string
	paymentStatus ProviderStatus

	// refunds are the refund attempts, oldest first. Every attempt but the
	// last has a refund the provider failed: a new key is only ever made
	// after the previous one's refund failed, so at most one refund of the
	// payment can succeed.
	refunds     []RefundAttempt
	latePayment bool

	taskToken string
	note      string
	history   []HistoryEntry

	// outbox holds the events a change raised, for the Store to write in
	// the same transaction as the change; never stored on the row.
	outbox []events.Envelope
}

// New returns a reserved purchase of a seat of in, holding it until now +
// the intensive's hold duration.
func New(id string, in Intensive, studentID string, now time.Time) (Purchase, error) {
	switch {
	case id == "":
		return Purchase{}, club.Invalid("purchase_id", "is required")
	case in.ID() == "":
		return Purchase{}, club.Invalid("intensive_id", "is required")
	case studentID == "":
		return Purchase{}, club.Invalid("student_id", "is required")
	case now.IsZero():
		return Purchase{}, club.Invalid("created_at", "is required")
	}
	now = now.UTC()
	return Purchase{
		id: id, intensiveID: in.ID(), studentID: studentID, price: in.Price(),
		status: StatusReserved, createdAt: now, holdExpiresAt: now.Add(in.HoldDuration()),
		history: []HistoryEntry{{Status: StatusReserved, At: now}},
	}, nil
}

func (p Purchase) ID() string                    { return p.id }
func (p Purchase) IntensiveID() string           { return p.intensiveID }
func (p Purchase) StudentID() string             { return p.studentID }
func (p Purchase) Price() Price                  { return p.price }
func (p Purchase) Status() Status                { return p.status }
func (p Purchase) CreatedAt() time.Time          { return p.createdAt }
func (p Purchase) HoldExpiresAt() time.Time      { return p.holdExpiresAt }
func (p Purchase) PaymentID() string             { return p.paymentID }
func (p Purchase) CheckoutURL() string           { return p.checkoutURL }
func (p Purchase) PaymentStatus() ProviderStatus { return p.paymentStatus }

// RefundID and RefundStatus are the current (last) refund attempt's
// provider refund and status; empty without one.
func (p Purchase) RefundID() string             { return p.currentRefund().RefundID }
func (p Purchase) RefundStatus() ProviderStatus { return p.currentRefund().Status }

// Refunds returns the refund attempts, oldest first.
func (p Purchase) Refunds() []RefundAttempt { return slices.Clone(p.refunds) }

func (p Purchase) currentRefund() RefundAttempt {
	if len(p.refunds) == 0 {
		return RefundAttempt{}
	}
	return p.refunds[len(p.refunds)-1]
}

// LatePayment reports whether the refund is for a payment that arrived after
// the hold expired (rather than for access that could not be granted).
func (p Purchase) LatePayment() bool { return p.latePayment }

// TaskToken is the Step Functions token of the saga's wait for the payment
// webhook, set only while the purchase is payment_pending. Never show it to
// clients: it completes the wait.
func (p Purchase) TaskToken() string { return p.taskToken }

// Note says why the purchase is expired or needs reconciliation, for people.
func (p Purchase) Note() string { return p.note }

// History returns the statuses the purchase entered, oldest first.
func (p Purchase) History() []HistoryEntry { return slices.Clone(p.history) }

// PaymentKey is the purchase's stable payment idempotency key.
func (p Purchase) PaymentKey() string { return PaymentKey(p.id) }

// RefundKey is the current refund attempt's idempotency key, empty before
// a refund intent.
func (p Purchase) RefundKey() string { return p.currentRefund().Key }

// openRefundAttempt gives a new refund intent the attempt that carries it:
// the last attempt again while the provider has not said its refund failed
// (its key finds the refund the provider may already have made, and no
// second one can be made beside it), else a new attempt under the next key.
func (p *Purchase) openRefundAttempt(at time.Time) {
	key := NextRefundKey(p.id, p.refunds)
	if n := len(p.refunds); n > 0 && p.refunds[n-1].Key == key {
		return
	}
	p.refunds = append(p.refunds, RefundAttempt{Key: key, RequestedAt: at.UTC()})
}

// NextRefundKey is the key the next refund intent of a purchase with these
// attempts asks the provider with: the last attempt's while its refund has
// not failed, else the next attempt's.
func NextRefundKey(purchaseID string, attempts []RefundAttempt) string {
	if n := len(attempts); n > 0 && attempts[n-1].Status != ProviderFailed {
		return attempts[n-1].Key
	}
	return RefundKey(purchaseID, len(attempts)+1)
}

// HoldExpired reports whether the hold deadline has passed at now.
func (p Purchase) HoldExpired(now time.Time) bool { return !now.Before(p.holdExpiresAt) }

// PaymentRequestCutoff is when the saga stops asking a silent provider for
// the payment: a tenth of the hold before its deadline, so that a checkout
// URL the provider gives at the last moment still leaves the student time to
// pay. Past it, the purchase expires.
func (p Purchase) PaymentRequestCutoff() time.Time {
	return p.holdExpiresAt.Add(-p.holdExpiresAt.Sub(p.createdAt) / 10)
}

// HoldsSeat reports whether the purchase holds a seat of the intensive (a
// held seat, not a taken one). needs_reconciliation keeps what the status
// before it had.
func (p Purchase) HoldsSeat() bool {
	s := p.status
	if s == StatusNeedsReconciliation {
		s = p.previousStatus()
	}
	return seatAccounting[s] == seatHeld
}

// previousStatus is the status before the current one (empty for a new
// purchase).
func (p Purchase) previousStatus() Status {
	if len(p.history) < 2 {
		return ""
	}
	return p.history[len(p.history)-2].Status
}

// VisibleTo reports whether a user may see the purchase: only its student.
func (p Purchase) VisibleTo(userID string) bool { return userID != "" && userID == p.studentID }

// moveTo is every status change: it refuses what the table does not allow
// and appends to the history. Moving to the current status is a no-op.
func (p *Purchase) moveTo(to Status, at time.Time) error {
	if p.status == to {
		return nil
	}
	if !CanTransition(p.status, to) {
		return &TransitionError{From: p.status, To: to}
	}
	p.status = to
	p.history = append(p.history, HistoryEntry{Status: to, At: at.UTC()})
	if to != StatusPaymentPending {
		p.taskToken = "" // only the wait for the webhook uses it
	}
	return nil
}

// adoptPayment records the provider's payment id, or checks it against the
// one recorded.
func (p *Purchase) adoptPayment(paymentID string) error {
	switch {
	case paymentID == "":
		return fmt.Errorf("purchase %s: empty payment id", p.id)
	case p.paymentID == "":
		p.paymentID = paymentID
	case p.paymentID != paymentID:
		return fmt.Errorf("purchase %s has payment %s, not %s: %w", p.id, p.paymentID, paymentID, ErrPaymentMismatch)
	}
	return nil
}

// observePayment keeps the most final status seen: providers' notifications
// and reads can arrive out of order, and a final status never reverts.
func (p *Purchase) observePayment(s ProviderStatus) {
	if !p.paymentStatus.Final() && s != "" {
		p.paymentStatus = s
	}
}

// AwaitProvider: the provider has not answered the request for a payment
// (reserved → awaiting_provider; a repeat keeps the status). note says what
// the last attempt saw.
func (p *Purchase) AwaitProvider(note string, at time.Time) error {
	if err := p.moveTo(StatusAwaitingProvider, at); err != nil {
		return err
	}
	p.note = note
	return nil
}

// RecordPayment: the provider created the payment (reserved or
// awaiting_provider → payment_pending).
func (p *Purchase) RecordPayment(paymentID, checkoutURL string, status ProviderStatus, at time.Time) error {
	if err := p.adoptPayment(paymentID); err != nil {
		return err
	}
	if p.status == StatusAwaitingProvider {
		p.note = ""
	}
	if err := p.moveTo(StatusPaymentPending, at); err != nil {
		return err
	}
	if p.checkoutURL == "" {
		p.checkoutURL = checkoutURL
	}
	p.observePayment(status)
	return nil
}

// ObservePayment records what the provider says about the purchase's
// payment (a webhook or a status read), without changing the purchase's
// status: the saga decides what it means. A payment id other than the
// recorded one is ErrPaymentMismatch.
func (p *Purchase) ObservePayment(paymentID string, status ProviderStatus) error {
	if err := p.adoptPayment(paymentID); err != nil {
		return err
	}
	p.observePayment(status)
	return nil
}

// AttachTaskToken stores the token of the saga's wait for the webhook; it
// is refused (ErrStaleStep) unless the purchase is payment_pending.
func (p *Purchase) AttachTaskToken(token string) error {
	if p.status != StatusPaymentPending {
		return fmt.Errorf("purchase %s is %s, not waiting for payment: %w", p.id, p.status, ErrStaleStep)
	}
	if token == "" {
		return fmt.Errorf("purchase %s: empty task token", p.id)
	}
	p.taskToken = token
	return nil
}

// StartChecking: the hold deadline passed without a webhook; the saga asks
// the provider (payment_pending → checking_payment).
func (p *Purchase) StartChecking(at time.Time) error { return p.moveTo(StatusCheckingPayment, at) }

// Confirm: the payment succeeded and access is granted (→ confirmed). It
// needs a payment observed as succeeded.
func (p *Purchase) Confirm(at time.Time) error {
	if p.status != StatusConfirmed && p.paymentStatus != ProviderSucceeded {
		return fmt.Errorf("purchase %s: confirm needs a succeeded payment, the provider said %q", p.id, p.paymentStatus)
	}
	return p.moveTo(StatusConfirmed, at)
}

// Expire: no payment in time (→ expired; the hold is released). It refuses
// with ErrPaymentSucceeded once a succeeded payment has been observed: that
// money arrived while the seat was still held, so the seat is the student's.
func (p *Purchase) Expire(note string, at time.Time) error {
	if p.status == StatusExpired {
		return nil
	}
	if !CanTransition(p.status, StatusExpired) {
		return &TransitionError{From: p.status, To: StatusExpired}
	}
	if p.paymentStatus == ProviderSucceeded {
		return fmt.Errorf("purchase %s: not expiring: %w", p.id, ErrPaymentSucceeded)
	}
	if err := p.moveTo(StatusExpired, at); err != nil {
		return err
	}
	p.note = note
	return nil
}

// Events returns the events the changes made to p raised: the Store writes
// them to the outbox in the same transaction as the purchase.
func (p Purchase) Events() []events.Envelope { return slices.Clone(p.outbox) }

// requestRefund raises refund.requested, so that the refund execution has
// an owner from the moment refund_pending is written: the relay (or, if it
// fails, the sweeper) starts <id>-refund from the outbox row.
func (p *Purchase) requestRefund(reason string, at time.Time) error {
	env, err := events.New(events.NewID(), at, events.RefundRequested{
		PurchaseID: p.id, PaymentID: p.paymentID, Reason: reason, Attempt: p.RefundAttempt(),
	})
	if err != nil {
		return fmt.Errorf("purchase %s: %w", p.id, err)
	}
	p.outbox = append(p.outbox, env)
	return nil
}

// BeginRefund records the refund intent (→ refund_pending). From expired it
// is a late payment, and the seat counters stay as they are; from
// awaiting_provider, payment_pending or checking_payment the paid purchase
// could not be granted access, and the hold is released. It needs a payment observed as
// succeeded: only money received is refunded.
func (p *Purchase) BeginRefund(note string, at time.Time) error {
	if p.status == StatusRefundPending {
		return nil
	}
	if p.paymentStatus != ProviderSucceeded {
		return fmt.Errorf("purchase %s: refund needs a succeeded payment, the provider said %q", p.id, p.paymentStatus)
	}
	late := p.status == StatusExpired
	if err := p.moveTo(StatusRefundPending, at); err != nil {
		return err
	}
	p.openRefundAttempt(at)
	p.latePayment = late
	p.note = note
	if late {
		// No execution runs for an expired purchase: the refund needs one.
		return p.requestRefund(note, at)
	}
	return nil
}

// RefundRequested reports whether a refund intent was recorded.
func (p Purchase) RefundRequested() bool {
	return slices.ContainsFunc(p.history, func(h HistoryEntry) bool { return h.Status == StatusRefundPending })
}

// RecordRefund records what the provider says about one of the purchase's
// refunds: the attempt that has refundID, or else the current attempt,
// which adopts it (its key made it: an earlier attempt's refund is always
// recorded before a new key is made). A final status never reverts. The
// purchase must have a refund intent; a refund id other than the current
// attempt's or an earlier one's is ErrPaymentMismatch.
func (p *Purchase) RecordRefund(refundID string, status ProviderStatus) error {
	if len(p.refunds) == 0 {
		return fmt.Errorf("purchase %s is %s and has no refund: %w", p.id, p.status, ErrStaleStep)
	}
	if refundID == "" {
		return fmt.Errorf("purchase %s: empty refund id", p.id)
	}
	// A copy of a Purchase shares the attempts: change this one's only.
	p.refunds = slices.Clone(p.refunds)
	i := slices.IndexFunc(p.refunds, func(a RefundAttempt) bool { return a.RefundID == refundID })
	if i < 0 {
		i = len(p.refunds) - 1
		if cur := p.refunds[i]; cur.RefundID != "" {
			// One key gives one refund: another id is not ours.
			return fmt.Errorf("purchase %s has refund %s, not %s: %w", p.id, cur.RefundID, refundID, ErrPaymentMismatch)
		}
		p.refunds[i].RefundID = refundID
	}
	if a := &p.refunds[i]; !a.Status.Final() && status != "" {
		a.Status = status
	}
	return nil
}

// MarkRefunded: the provider confirmed the refund (→ refunded). It needs a
// refund recorded as succeeded.
func (p *Purchase) MarkRefunded(at time.Time) error {
	if p.status != StatusRefunded && p.RefundStatus() != ProviderSucceeded {
		return fmt.Errorf("purchase %s: refunded needs a succeeded refund, the provider said %q", p.id, p.RefundStatus())
	}
	return p.moveTo(StatusRefunded, at)
}

// NeedReconciliation: the saga gave up without a definite answer (→
// needs_reconciliation); note says what is unknown, for the person who acts.
func (p *Purchase) NeedReconciliation(note string, at time.Time) error {
	if p.status == StatusNeedsReconciliation {
		return nil
	}
	if err := p.moveTo(StatusNeedsReconciliation, at); err != nil {
		return err
	}
	p.note = note
	return nil
}

// Action is what a person decides for a purchase in needs_reconciliation.
type Action string

// The actions of clubctl reconcile resolve.
const (
	// ActionConfirm grants access: the held seat becomes taken (→ confirmed).
	ActionConfirm Action = "confirm"
	// ActionRelease frees the held seat: no money was taken (→ expired).
	ActionRelease Action = "release"
	// ActionRefund gives the money back: the hold, if any, is released and
	// a refund execution starts from a refund.requested row (→
	// refund_pending, then refunded). After a refund the provider failed,
	// it asks again under a new key; otherwise under the current one.
	ActionRefund Action = "refund"
)

// Actions lists the actions.
func Actions() []Action { return []Action{ActionConfirm, ActionRelease, ActionRefund} }

// Resolution is a person's decision for a purchase in needs_reconciliation.
type Resolution struct {
	Action Action
	// By is who decided (the operator's identity); Reason why. Both are
	// required and recorded in the history.
	By, Reason string
	// Force overrides ErrContradicted: the person knows better than the
	// recorded answer (they asked the provider's dashboard, say).
	Force bool
}

// Resolve applies a person's decision to a purchase in needs_reconciliation,
// with the seat effect the decision means (SeatEffectBetween) and a history
// entry naming the person and the reason. Repeating the same resolution is a
// no-op. Errors: ErrNotReconcilable, ErrContradicted (unless r.Force),
// ErrNoHold (confirm, or release, without a held seat), or a validation
// error for a missing person, reason or unknown action.
func (p *Purchase) Resolve(r Resolution, at time.Time) error {
	to, ok := map[Action]Status{ActionConfirm: StatusConfirmed, ActionRelease: StatusExpired, ActionRefund: StatusRefundPending}[r.Action]
	switch {
	case !ok:
		return fmt.Errorf("purchase %s: action %q is not one of confirm, release, refund", p.id, r.Action)
	case r.By == "" || r.Reason == "":
		return fmt.Errorf("purchase %s: a resolution needs who decided and why", p.id)
	}
	if p.status == to && len(p.history) > 0 {
		if last := p.history[len(p.history)-1]; last.By == r.By && last.Reason == r.Reason {
			return nil // the same resolution again
		}
	}
	if p.status != StatusNeedsReconciliation {
		return fmt.Errorf("purchase %s is %s: %w", p.id, p.status, ErrNotReconcilable)
	}
	if err := p.contradiction(r.Action); err != nil && !r.Force {
		return fmt.Errorf("purchase %s: %s: %w (--force to override)", p.id, err, ErrContradicted)
	}
	if r.Action != ActionRefund && !p.HoldsSeat() && (r.Action == ActionConfirm || p.paymentStatus == ProviderSucceeded) {
		return fmt.Errorf("purchase %s: %w: it was released when its refund began; refund it instead", p.id, ErrNoHold)
	}
	if r.Action == ActionRefund && p.paymentID == "" {
		return fmt.Errorf("purchase %s: no payment was recorded, there is nothing to refund: %w", p.id, ErrContradicted)
	}
	if err := p.moveTo(to, at); err != nil {
		return err
	}
	last := &p.history[len(p.history)-1]
	last.By, last.Reason = r.By, r.Reason
	p.note = fmt.Sprintf("resolved by %s (%s): %s", r.By, r.Action, r.Reason)
	if r.Action == ActionRefund {
		p.openRefundAttempt(at)
		p.latePayment = false
		// The outbox carries no personal data: who decided and why stay on
		// the purchase's history.
		return p.requestRefund("a person's decision (clubctl reconcile resolve)", at)
	}
	return nil
}

// contradiction says why the provider's recorded answer contradicts an
// action, or nil.
func (p Purchase) contradiction(a Action) error {
	recorded := p.paymentStatus
	if recorded == "" {
		recorded = "none"
	}
	switch {
	case a == ActionConfirm && p.paymentStatus != ProviderSucceeded:
		return fmt.Errorf("confirm grants access for money taken, and the recorded payment status is %s", recorded)
	case a == ActionRelease && p.paymentStatus == ProviderSucceeded:
		return fmt.Errorf("release keeps no money, and the recorded payment %s succeeded: confirm or refund", p.paymentID)
	case a == ActionRefund && p.paymentStatus == ProviderFailed:
		return fmt.Errorf("refund returns money taken, and the recorded payment %s failed", p.paymentID)
	}
	return nil
}

// RefundAttempt is how many refund intents (entries into refund_pending)
// the purchase has recorded: the first refund execution is <id>-refund, a
// later one (a person's refund after a failed one) <id>-refund-<n>, as
// execution names cannot be reused. It counts executions, not keys: see
// Refunds for the attempts at the provider.
func (p Purchase) RefundAttempt() int {
	n := 0
	for _, h := range p.history {
		if h.Status == StatusRefundPending {
			n++
		}
	}
	return n
}

// Snapshot is the stored form of a purchase.
type Snapshot struct {
	ID            string
	IntensiveID   string
	StudentID     string
	Price         Price
	Status        Status
	CreatedAt     time.Time
	HoldExpiresAt time.Time
	PaymentID     string
	CheckoutURL   string
	PaymentStatus ProviderStatus
	Refunds       []RefundAttempt
	LatePayment   bool
	TaskToken     string
	Note          string
	History       []HistoryEntry
}

// FromSnapshot rehydrates a stored purchase without validation.
func FromSnapshot(s Snapshot) Purchase {
	return Purchase{
		id: s.ID, intensiveID: s.IntensiveID, studentID: s.StudentID, price: s.Price,
		status: s.Status, createdAt: s.CreatedAt, holdExpiresAt: s.HoldExpiresAt,
		paymentID: s.PaymentID, checkoutURL: s.CheckoutURL, paymentStatus: s.PaymentStatus,
		refunds: slices.Clone(s.Refunds), latePayment: s.LatePayment,
		taskToken: s.TaskToken, note: s.Note, history: slices.Clone(s.History),
	}
}

// Snapshot returns the stored form of the purchase.
func (p Purchase) Snapshot() Snapshot {
	return Snapshot{
		ID: p.id, IntensiveID: p.intensiveID, StudentID: p.studentID, Price: p.price,
		Status: p.status, CreatedAt: p.createdAt, HoldExpiresAt: p.holdExpiresAt,
		PaymentID: p.paymentID, CheckoutURL: p.checkoutURL, PaymentStatus: p.paymentStatus,
		Refunds: slices.Clone(p.refunds), LatePayment: p.latePayment,
		TaskToken: p.taskToken, Note: p.note, History: slices.Clone(p.history),
	}
}

// Equal reports whether two purchases are the same in every stored field:
// what a store compares to skip a write that would change nothing.
func (p Purchase) Equal(q Purchase) bool {
	return p.id == q.id && p.intensiveID == q.intensiveID && p.studentID == q.studentID &&
		p.price == q.price && p.status == q.status &&
		p.createdAt.Equal(q.createdAt) && p.holdExpiresAt.Equal(q.holdExpiresAt) &&
		p.paymentID == q.paymentID && p.checkoutURL == q.checkoutURL && p.paymentStatus == q.paymentStatus &&
		slices.EqualFunc(p.refunds, q.refunds, func(a, b RefundAttempt) bool {
			return a.Key == b.Key && a.RefundID == b.RefundID && a.Status == b.Status && a.RequestedAt.Equal(b.RequestedAt)
		}) && p.latePayment == q.latePayment &&
		p.taskToken == q.taskToken && p.note == q.note &&
		slices.EqualFunc(p.history, q.history, func(a, b HistoryEntry) bool {
			return a.Status == b.Status && a.At.Equal(b.At) && a.By == b.By && a.Reason == b.Reason
		})
}
