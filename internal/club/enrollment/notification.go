package enrollment

import (
	"errors"
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
)

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
type Notification struct {
	status   NotificationStatus
	attempts int
	sentAt   time.Time
}

func (n Notification) Status() NotificationStatus { return n.status }
func (n Notification) Attempts() int              { return n.attempts }
func (n Notification) SentAt() time.Time          { return n.sentAt }

// BeginAttempt counts an attempt to send, before calling the provider. An
// unknown status stays unknown: the new attempt is what will resolve it.
func (n *Notification) BeginAttempt() error {
	if n.status == NotificationSent {
		return ErrAlreadySent
	}
	n.attempts++
	if n.status == NotificationFailed {
		n.status = NotificationPending
	}
	return nil
}

// MarkSent records the provider's acceptance. Marking a sent notification
// again keeps the first time.
func (n *Notification) MarkSent(at time.Time) {
	if n.status == NotificationSent {
		return
	}
	n.status = NotificationSent
	n.sentAt = at.UTC()
}

// MarkFailed records that sending was given up.
func (n *Notification) MarkFailed() {
	if n.status == NotificationPending || n.status == NotificationUnknown {
		n.status = NotificationFailed
	}
}

// MarkUnknown records an attempt whose result is unknown.
func (n *Notification) MarkUnknown() {
	if n.status != NotificationSent {
		n.status = NotificationUnknown
	}
}
