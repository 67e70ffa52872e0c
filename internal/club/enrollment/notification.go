package enrollment

import (
	"errors"
	"slices"
	"time"
)

// NotificationStatus is the business status of an enrollment's confirmation
// e-mail.
type NotificationStatus string

const (
	// NotificationPending: not sent yet (no attempt, or attempts that failed
	// transiently and will be retried).
	NotificationPending NotificationStatus = "pending"
	// NotificationSent: the provider accepted the message. Final.
	NotificationSent NotificationStatus = "sent"
	// NotificationFailed: given up (a permanent error, or attempts exhausted
	// and the message dead-lettered). A replay from the dead-letter queue may
	// try again.
	NotificationFailed NotificationStatus = "failed"
	// NotificationUnknown: the last attempt's result is unknown (the provider
	// may have accepted it and the answer was lost). A retry with the same
	// provider idempotency key resolves it.
	NotificationUnknown NotificationStatus = "unknown"
	// NotificationCancelled: the enrollment was cancelled before the mail
	// went out, so it will not be sent. Final.
	NotificationCancelled NotificationStatus = "cancelled"
)

// maxLastError bounds the last error kept on a notification.
const maxLastError = 512

// ErrAlreadySent is returned by BeginAttempt when the message was already
// sent: the notifier skips the provider call and acknowledges.
var ErrAlreadySent = errors.New("notification already sent")

// Notification is the state of the confirmation e-mail. The zero value is not
// valid; enrollments start with a pending one.
//
// Transitions (anything else leaves the state unchanged):
//
//	pending ─BeginAttempt→ pending (attempts+1)      sent is final:
//	failed  ─BeginAttempt→ pending (attempts+1)        BeginAttempt → ErrAlreadySent,
//	unknown ─BeginAttempt→ unknown (attempts+1)        MarkFailed/MarkUnknown no-ops
//	pending|failed|unknown ─MarkSent→ sent
//	pending|unknown ─MarkFailed→ failed
//	pending|failed|unknown ─MarkUnknown→ unknown
//	pending|failed|unknown ─Cancel→ cancelled       cancelled is final
//
// A change may also record the last error of a failed attempt (see
// NotificationChange.WithLastError); sending clears it.
type Notification struct {
	status    NotificationStatus
	attempts  int
	sentAt    time.Time
	lastError string
}

func (n Notification) Status() NotificationStatus { return n.status }
func (n Notification) Attempts() int              { return n.attempts }
func (n Notification) SentAt() time.Time          { return n.sentAt }

// LastError is why the last failed attempt failed, "" if none did or the
// mail was sent since.
func (n Notification) LastError() string { return n.lastError }

// BeginAttempt counts an attempt to send, before calling the provider. An
// unknown status stays unknown: the new attempt is what will resolve it.
func (n *Notification) BeginAttempt() error { return n.Apply(BeginAttemptChange()) }

// MarkSent records the provider's acceptance. Marking a sent notification
// again keeps the first time.
func (n *Notification) MarkSent(at time.Time) { _ = n.Apply(SentChange(at)) }

// MarkFailed records that sending was given up.
func (n *Notification) MarkFailed() { _ = n.Apply(FailedChange()) }

// MarkUnknown records an attempt whose result is unknown.
func (n *Notification) MarkUnknown() { _ = n.Apply(UnknownChange()) }

// NotificationChange is one of the transitions above in a form a store can
// apply without reading the notification first: a few cases, each a single
// conditional write ("if the status is one of From, set …"). The first case
// whose From holds the current status applies; in a status no case names
// the change does nothing, except in RefusedIn, where it fails with Refusal
// and changes nothing.
type NotificationChange struct {
	Cases     []NotificationCase
	RefusedIn NotificationStatus
	Refusal   error
}

// NotificationCase is one case of a NotificationChange.
type NotificationCase struct {
	From []NotificationStatus
	To   NotificationStatus
	// CountAttempt adds one to the attempts.
	CountAttempt bool
	// SentAt, when not zero, becomes the sent time.
	SentAt time.Time
	// LastError, when not empty, becomes the last error. A case to sent
	// clears it.
	LastError string
}

// WithLastError returns c recording why the attempt failed in every case
// (bounded; the caller redacts personal data first).
func (c NotificationChange) WithLastError(msg string) NotificationChange {
	if len(msg) > maxLastError {
		msg = msg[:maxLastError-3] + "..."
	}
	cases := make([]NotificationCase, len(c.Cases))
	for i, k := range c.Cases {
		k.LastError = msg
		cases[i] = k
	}
	c.Cases = cases
	return c
}

// BeginAttemptChange counts an attempt: pending and failed become pending,
// unknown stays unknown; a sent notification refuses it with ErrAlreadySent.
func BeginAttemptChange() NotificationChange {
	return NotificationChange{
		Cases: []NotificationCase{
			{From: []NotificationStatus{NotificationPending, NotificationFailed}, To: NotificationPending, CountAttempt: true},
			{From: []NotificationStatus{NotificationUnknown}, To: NotificationUnknown, CountAttempt: true},
		},
		RefusedIn: NotificationSent, Refusal: ErrAlreadySent,
	}
}

// SentChange records the provider's acceptance at at; sent is final and
// keeps its first time.
func SentChange(at time.Time) NotificationChange {
	return NotificationChange{Cases: []NotificationCase{
		{From: []NotificationStatus{NotificationPending, NotificationFailed, NotificationUnknown}, To: NotificationSent, SentAt: at.UTC()},
	}}
}

// FailedChange gives up: pending and unknown become failed.
func FailedChange() NotificationChange {
	return NotificationChange{Cases: []NotificationCase{
		{From: []NotificationStatus{NotificationPending, NotificationUnknown}, To: NotificationFailed},
	}}
}

// UnknownChange records an attempt whose result is unknown: anything but
// sent becomes unknown.
func UnknownChange() NotificationChange {
	return NotificationChange{Cases: []NotificationCase{
		{From: []NotificationStatus{NotificationPending, NotificationFailed, NotificationUnknown}, To: NotificationUnknown},
	}}
}

// GiveUpChange is the last attempt's give-up: a pending notification
// becomes failed, an unknown one stays unknown (the provider may have the
// message; the case exists so that WithLastError records why).
func GiveUpChange() NotificationChange {
	return NotificationChange{Cases: []NotificationCase{
		{From: []NotificationStatus{NotificationPending}, To: NotificationFailed},
		{From: []NotificationStatus{NotificationUnknown}, To: NotificationUnknown},
	}}
}

// RetryChange records a failed attempt that will be retried: the status
// stays as it is (pending, or unknown after a lost answer); chain
// WithLastError to say why.
func RetryChange() NotificationChange {
	return NotificationChange{Cases: []NotificationCase{
		{From: []NotificationStatus{NotificationPending}, To: NotificationPending},
		{From: []NotificationStatus{NotificationUnknown}, To: NotificationUnknown},
	}}
}

// CancelledChange records that the mail of a cancelled enrollment will not
// be sent: anything but sent becomes cancelled.
func CancelledChange() NotificationChange {
	return NotificationChange{Cases: []NotificationCase{
		{From: []NotificationStatus{NotificationPending, NotificationFailed, NotificationUnknown}, To: NotificationCancelled},
	}}
}

// Apply applies c to n (see NotificationChange).
func (n *Notification) Apply(c NotificationChange) error {
	k, err := c.For(n.status)
	if err != nil || k == nil {
		return err
	}
	n.status = k.To
	if k.CountAttempt {
		n.attempts++
	}
	if !k.SentAt.IsZero() {
		n.sentAt = k.SentAt.UTC()
	}
	switch {
	case k.To == NotificationSent:
		n.lastError = ""
	case k.LastError != "":
		n.lastError = k.LastError
	}
	return nil
}

// For returns the case of c that applies in status, nil when none does, or
// c.Refusal when status is c.RefusedIn.
func (c NotificationChange) For(status NotificationStatus) (*NotificationCase, error) {
	if c.Refusal != nil && status == c.RefusedIn {
		return nil, c.Refusal
	}
	for i := range c.Cases {
		if slices.Contains(c.Cases[i].From, status) {
			return &c.Cases[i], nil
		}
	}
	return nil, nil
}
