package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/emf"
	"github.com/clubdev/club/internal/fault"
	"github.com/clubdev/club/internal/mail"
	"github.com/clubdev/club/internal/obs"
)

// AddressResolver finds where to send a student's mail under the address
// policy; profile.Resolver implements it.
type AddressResolver interface {
	Address(ctx context.Context, studentID, captured string) (string, error)
}

// Mailer sends one message under an idempotency key; *mail.Client implements
// it, with its outcome classes (mail.ErrRejected, …).
type Mailer interface {
	Send(ctx context.Context, key string, m mail.Message) (mail.Receipt, error)
}

var (
	_ AddressResolver = profile.Resolver{}
	_ Mailer          = (*mail.Client)(nil)
)

// IdempotencyKey is the provider idempotency key of the confirmation for an
// enrollment.created event. It is derived from the event id, never generated,
// so every delivery and every retry of the event asks the provider for the
// same message, and the provider sends it at most once.
func IdempotencyKey(eventID string) string { return "notify-" + eventID }

// Metric names of the notifier (namespace obs.MetricsNamespace).
const (
	// MetricNotificationLatency is the end-to-end notification latency:
	// from the enrollment (the event's occurred_at) to the provider's
	// acceptance being recorded.
	MetricNotificationLatency = "NotificationLatency"
	MetricNotificationsSent   = "NotificationsSent"
)

// NotifierDeps are the Notifier's collaborators.
type NotifierDeps struct {
	Store     enrollment.NotificationStore
	Addresses AddressResolver
	Mailer    Mailer
	// Logger receives one line per sent mail and per decision worth
	// knowing about (nil means slog.Default()).
	Logger *slog.Logger
	// Metrics receives Embedded Metric Format lines (nil means io.Discard).
	Metrics io.Writer
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Notifier sends the enrollment confirmation for enrollment.created events
// and keeps the notification's business status on the enrollment
// (pending → sent | failed | unknown). It is safe for concurrent use.
type Notifier struct {
	store     enrollment.NotificationStore
	addresses AddressResolver
	mailer    Mailer
	log       *slog.Logger
	metrics   io.Writer
	now       func() time.Time
}

// NewNotifier checks d and returns a Notifier.
func NewNotifier(d NotifierDeps) (*Notifier, error) {
	var errs []error
	if d.Store == nil {
		errs = append(errs, errors.New("notifier: Store is required"))
	}
	if d.Addresses == nil {
		errs = append(errs, errors.New("notifier: Addresses is required"))
	}
	if d.Mailer == nil {
		errs = append(errs, errors.New("notifier: Mailer is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	n := &Notifier{store: d.Store, addresses: d.Addresses, mailer: d.Mailer, log: d.Logger, metrics: d.Metrics, now: d.Now}
	if n.log == nil {
		n.log = slog.Default()
	}
	if n.metrics == nil {
		n.metrics = io.Discard
	}
	if n.now == nil {
		n.now = time.Now
	}
	return n, nil
}

// Notify sends the confirmation of one enrollment.created event (other event
// types are ignored) and records the outcome. It is idempotent per event:
// a delivery after the mail was recorded as sent does nothing, and every
// attempt uses the event's IdempotencyKey, so the provider never sends a
// second mail for one event, whatever happened to the answers.
//
// The steps, each one conditional write on the enrollment and no read
// (enrollment.NotificationStore.ChangeNotification):
//
//  1. count the attempt (enrollment.BeginAttemptChange); already sent →
//     done;
//  2. resolve the address under the address policy; none → failed;
//  3. send; then record sent, unknown (no answer: the provider may have it)
//     or failed (rejected). Transient failures leave the status as it is
//     (pending, or unknown after a lost answer), unless lastAttempt is true
//     and the status is pending: then it is recorded as failed, because the
//     message is about to reach the dead-letter queue.
//
// The error keeps its cause for the caller to classify: events sentinels,
// club.ErrNotFound (no such enrollment), profile.ErrNoAddress and
// mail.ErrRejected are permanent; mail.ErrRateLimited carries the provider's
// Retry-After (see mail.RetryAfter); anything else is transient, including a
// failure to record an outcome, so that the next delivery records it.
func (n *Notifier) Notify(ctx context.Context, env events.Envelope, lastAttempt bool) error {
	return n.notify(ctx, env, lastAttempt, n.addresses)
}

// notify is Notify with the address resolver of the message's batch.
func (n *Notifier) notify(ctx context.Context, env events.Envelope, lastAttempt bool, addresses AddressResolver) error {
	if env.Type != events.TypeEnrollmentCreated {
		n.log.DebugContext(ctx, "event ignored: not an enrollment.created", obs.EventType(string(env.Type)))
		return nil
	}
	p, err := env.EnrollmentCreated()
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	ctx = obs.WithAttrs(ctx, obs.EnrollmentID(p.EnrollmentID), obs.ClassID(p.ClassID))

	e, err := n.store.ChangeNotification(ctx, p.EnrollmentID, enrollment.BeginAttemptChange())
	if errors.Is(err, enrollment.ErrAlreadySent) {
		n.log.InfoContext(ctx, "notification already sent; nothing to do")
		return nil
	}
	if err != nil {
		return fmt.Errorf("notify enrollment %s: begin attempt: %w", p.EnrollmentID, err)
	}

	to, err := addresses.Address(ctx, p.StudentID, e.CapturedAddress())
	if errors.Is(err, profile.ErrNoAddress) {
		return n.record(ctx, p.EnrollmentID, enrollment.FailedChange(), err)
	}
	if err != nil {
		return n.retryLater(ctx, p.EnrollmentID, lastAttempt, fmt.Errorf("notify enrollment %s: resolve address: %w", p.EnrollmentID, err))
	}

	receipt, err := n.mailer.Send(ctx, IdempotencyKey(env.EventID), confirmation(to, p))
	switch {
	case err == nil:
		// Accepted, not recorded: the next delivery asks again under the
		// same key and the provider answers with the same message.
		if err := fault.Inject(ctx, fault.NotifierAfterSend, env.EventID); err != nil {
			return fmt.Errorf("notify enrollment %s: mail accepted (message %s) but not recorded: %w", p.EnrollmentID, receipt.MessageID, err)
		}
		return n.sent(ctx, env, p, receipt, to, e.Notification().Attempts())
	case errors.Is(err, mail.ErrKeyReused):
		// The key is this event's alone, so the provider accepted a message
		// for this event in an earlier attempt whose answer was lost, with
		// another payload: the address changed in between (address policy
		// "current"). That message went out; a second one under a new key
		// would be a duplicate. Record what happened.
		n.log.WarnContext(ctx, "provider already holds this event's message with another payload; recording it as sent",
			slog.Any("to", obs.Email(to)), obs.Err(err))
		return n.sent(ctx, env, p, mail.Receipt{Replayed: true}, to, e.Notification().Attempts())
	case errors.Is(err, mail.ErrRejected):
		return n.record(ctx, p.EnrollmentID, enrollment.FailedChange(), fmt.Errorf("notify enrollment %s: %w", p.EnrollmentID, err))
	case errors.Is(err, mail.ErrOutcomeUnknown):
		// Never "failed" and never a new key: the retry with the same key
		// finds out.
		return n.record(ctx, p.EnrollmentID, enrollment.UnknownChange(), fmt.Errorf("notify enrollment %s: %w", p.EnrollmentID, err))
	default:
		return n.retryLater(ctx, p.EnrollmentID, lastAttempt, fmt.Errorf("notify enrollment %s: %w", p.EnrollmentID, err))
	}
}

// confirmation is the mail for an enrollment. It depends on the event and the
// address only, so every attempt for one event sends the same payload under
// the same key, as the provider's idempotency requires.
func confirmation(to string, p events.EnrollmentCreated) mail.Message {
	text := fmt.Sprintf("You have a seat in class %s.", p.ClassID)
	if p.ClassStartsAt != nil {
		text += fmt.Sprintf(" The class starts on %s.", p.ClassStartsAt.UTC().Format("Monday, 2 January 2006 at 15:04 MST"))
	}
	text += fmt.Sprintf("\n\nEnrollment %s.", p.EnrollmentID)
	return mail.Message{To: to, Subject: "You are enrolled", Text: text}
}

// sent records the provider's acceptance and reports the latency.
func (n *Notifier) sent(ctx context.Context, env events.Envelope, p events.EnrollmentCreated, r mail.Receipt, to string, attempts int) error {
	now := n.now()
	if _, err := n.store.ChangeNotification(ctx, p.EnrollmentID, enrollment.SentChange(now)); err != nil {
		// The next delivery sends again under the same key; the provider
		// answers with the same message and nothing new goes out.
		return fmt.Errorf("notify enrollment %s: mail accepted (message %s) but recording it failed: %w", p.EnrollmentID, r.MessageID, err)
	}
	latency := now.Sub(env.OccurredAt)
	n.log.InfoContext(ctx, "notification sent", slog.Any("to", obs.Email(to)), slog.String("message_id", r.MessageID),
		slog.Bool("provider_replayed", r.Replayed), slog.Int("attempts", attempts), slog.Duration("latency", latency))
	err := emf.Entry{
		Namespace:  obs.MetricsNamespace,
		Dimensions: map[string]string{obs.DimFunction: functionName},
		Metrics:    []emf.Metric{emf.Durations(MetricNotificationLatency, latency), emf.Counter(MetricNotificationsSent, 1)},
		Properties: map[string]any{obs.KeyEventID: env.EventID, obs.KeyEnrollmentID: p.EnrollmentID},
		Timestamp:  now,
	}.Emit(n.metrics)
	if err != nil {
		n.log.WarnContext(ctx, "could not emit metrics", obs.Err(err))
	}
	return nil
}

// record applies a status change for an outcome and returns cause. If the
// change cannot be written, the result is a transient error instead, so the
// message is delivered again and the outcome recorded then.
func (n *Notifier) record(ctx context.Context, enrollmentID string, change enrollment.NotificationChange, cause error) error {
	if _, err := n.store.ChangeNotification(ctx, enrollmentID, change); err != nil {
		return fmt.Errorf("notify enrollment %s: record outcome of %q: %w", enrollmentID, cause.Error(), err)
	}
	return cause
}

// retryLater returns a transient cause; on the last attempt a pending
// notification is recorded as failed first (an unknown one stays unknown:
// the provider may have the message).
func (n *Notifier) retryLater(ctx context.Context, enrollmentID string, lastAttempt bool, cause error) error {
	if !lastAttempt {
		return cause
	}
	return n.record(ctx, enrollmentID, enrollment.GiveUpChange(), cause)
}
