package notifier

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
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
	// MetricPendingAge is, for each failed attempt that will be retried, how
	// long the mail has been owed (now − the event's occurred_at), in
	// seconds. With retries as fresh copies the queue's own age no longer
	// shows a long outage; this does (NotificationsPendingAlarm).
	MetricPendingAge = "PendingNotificationAge"
	// MetricContractConflicts counts provider 409s for an event's own key:
	// the provider holds another payload under notify-<event_id>.
	MetricContractConflicts = "NotificationContractConflicts"
)

// NotifierDeps are the Notifier's collaborators.
type NotifierDeps struct {
	Store     enrollment.NotificationStore
	Addresses AddressResolver
	Mailer    Mailer
	// Breaker, when set, is the breaker in the Mailer's chain, asked
	// before anything is spent on a mail: a mail it refuses costs no
	// write (its attempts keep counting calls to the provider), and the
	// handler parks it (see Handler) and releases the parked mail when the
	// breaker closes.
	Breaker *Breaker
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
	breaker   *Breaker
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
	n := &Notifier{store: d.Store, addresses: d.Addresses, mailer: d.Mailer, breaker: d.Breaker, log: d.Logger, metrics: d.Metrics, now: d.Now}
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
	var s samples
	err := n.notify(ctx, env, lastAttempt, n.addresses, &s)
	n.emit(ctx, &s)
	return err
}

// notify is Notify with the address resolver of the message's batch, and
// the batch's metric samples, which the caller emits (see samples).
func (n *Notifier) notify(ctx context.Context, env events.Envelope, lastAttempt bool, addresses AddressResolver, s *samples) error {
	if env.Type != events.TypeEnrollmentCreated {
		n.log.DebugContext(ctx, "event ignored: not an enrollment.created", obs.EventType(string(env.Type)))
		return nil
	}
	p, err := env.EnrollmentCreated()
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	ctx = obs.WithAttrs(ctx, obs.EnrollmentID(p.EnrollmentID), obs.ClassID(p.ClassID))

	if n.breaker != nil && !lastAttempt {
		// Before the attempt is counted: a mail the breaker refuses costs
		// nothing and is not an attempt. (A last attempt goes the whole
		// way, so that a mail given up is recorded as failed.)
		pass, err := n.breaker.Admit()
		if err != nil {
			s.retried(n.now().Sub(env.OccurredAt))
			return fmt.Errorf("notify enrollment %s: %w", p.EnrollmentID, err)
		}
		defer pass.Release()
		ctx = WithPass(ctx, pass)
	}

	e, err := n.store.ChangeNotification(ctx, p.EnrollmentID, enrollment.BeginAttemptChange())
	if errors.Is(err, enrollment.ErrAlreadySent) {
		n.log.InfoContext(ctx, "notification already sent; nothing to do")
		return nil
	}
	if err != nil {
		return fmt.Errorf("notify enrollment %s: begin attempt: %w", p.EnrollmentID, err)
	}
	if e.Notification().Status() == enrollment.NotificationCancelled {
		n.log.InfoContext(ctx, "enrollment cancelled; its mail is not sent")
		return nil
	}
	if e.Status() == enrollment.StatusCancelled {
		// Cancelled while the mail was pending (an outage, a backlog): the
		// student no longer has the seat the mail would confirm.
		if _, err := n.store.ChangeNotification(ctx, p.EnrollmentID, enrollment.CancelledChange()); err != nil {
			return fmt.Errorf("notify enrollment %s: record cancellation: %w", p.EnrollmentID, err)
		}
		n.log.InfoContext(ctx, "enrollment cancelled; its mail is not sent")
		return nil
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
		return n.sent(ctx, env, p, receipt, to, e.Notification().Attempts(), s)
	case errors.Is(err, mail.ErrKeyReused):
		// The key is this event's alone and the mail's text depends on the
		// event and the address only, so the provider holds another payload
		// under it: an earlier attempt went to another address (the
		// profile changed in between, address policy current), or the
		// contract between us and the provider broke. Either way the mail
		// the student should have is not known to be sent: never "sent"
		// (pending becomes failed; unknown stays unknown, as the provider
		// may have sent the earlier payload), a dead letter with code
		// contract_conflict for a person to look at, and a metric.
		n.contractConflict(ctx, env, p)
		n.log.WarnContext(ctx, "provider holds another payload under this event's key", slog.Any("to", obs.Email(to)), obs.Err(err))
		return n.record(ctx, p.EnrollmentID, enrollment.GiveUpChange(), fmt.Errorf("notify enrollment %s: contract conflict: %w", p.EnrollmentID, err))
	case errors.Is(err, mail.ErrRejected):
		return n.record(ctx, p.EnrollmentID, enrollment.FailedChange(), fmt.Errorf("notify enrollment %s: %w", p.EnrollmentID, err))
	case errors.Is(err, mail.ErrOutcomeUnknown):
		// Never "failed" and never a new key: the retry with the same key
		// finds out (unless this was the last attempt: then it stays
		// unknown and the dead letter says why).
		return n.record(ctx, p.EnrollmentID, enrollment.UnknownChange(), fmt.Errorf("notify enrollment %s: %w", p.EnrollmentID, err))
	default:
		if !lastAttempt {
			s.retried(n.now().Sub(env.OccurredAt))
		}
		return n.retryLater(ctx, p.EnrollmentID, lastAttempt, fmt.Errorf("notify enrollment %s: %w", p.EnrollmentID, err))
	}
}

// samples gathers the metric samples of a batch's notifications: the
// latency of each mail sent, and how long each mail that will be retried
// has been owed. The batch writes them as one metrics line (emit) instead
// of a line a message: every line is CloudWatch Logs ingestion, billed per
// GB, and a line a mail cost about 400 bytes an enrollment. The ids of a
// sent mail are in its "notification sent" log line. Safe for concurrent
// use (a batch's messages are handled at once).
type samples struct {
	mu        sync.Mutex
	latencies []time.Duration
	owed      []float64 // seconds
}

// sent records the latency of a mail sent.
func (s *samples) sent(latency time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latencies = append(s.latencies, latency)
}

// retried records how long a mail that will be retried has been owed.
func (s *samples) retried(age time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.owed = append(s.owed, max(age, 0).Seconds())
}

// emit writes the samples as one metrics line (none if there are none):
// NotificationLatency and NotificationsSent for the mails sent,
// PendingNotificationAge for the mails that will be retried.
func (n *Notifier) emit(ctx context.Context, s *samples) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var metrics []emf.Metric
	if len(s.latencies) > 0 {
		metrics = append(metrics, emf.Durations(MetricNotificationLatency, s.latencies...), emf.Counter(MetricNotificationsSent, len(s.latencies)))
	}
	if len(s.owed) > 0 {
		metrics = append(metrics, emf.Metric{Name: MetricPendingAge, Unit: emf.Seconds, Values: s.owed})
	}
	if len(metrics) == 0 {
		return
	}
	err := emf.Entry{
		Namespace:  obs.MetricsNamespace,
		Dimensions: map[string]string{obs.DimFunction: FunctionName},
		Metrics:    metrics,
		Timestamp:  n.now(),
	}.Emit(n.metrics)
	if err != nil {
		n.log.WarnContext(ctx, "could not emit metrics", obs.Err(err))
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
func (n *Notifier) sent(ctx context.Context, env events.Envelope, p events.EnrollmentCreated, r mail.Receipt, to string, attempts int, s *samples) error {
	now := n.now()
	if _, err := n.store.ChangeNotification(ctx, p.EnrollmentID, enrollment.SentChange(now)); err != nil {
		// The next delivery sends again under the same key; the provider
		// answers with the same message and nothing new goes out.
		return fmt.Errorf("notify enrollment %s: mail accepted (message %s) but recording it failed: %w", p.EnrollmentID, r.MessageID, err)
	}
	latency := now.Sub(env.OccurredAt)
	// mail_message_id: the line already carries the SQS message's id as
	// message_id (the consumer's context).
	n.log.InfoContext(ctx, "notification sent", slog.Any("to", obs.Email(to)), slog.String("mail_message_id", r.MessageID),
		slog.Bool("provider_replayed", r.Replayed), slog.Int("attempts", attempts), slog.Duration("latency", latency))
	s.sent(latency)
	return nil
}

// contractConflict reports a provider 409 for the event's own key.
func (n *Notifier) contractConflict(ctx context.Context, env events.Envelope, p events.EnrollmentCreated) {
	err := emf.Entry{
		Namespace:  obs.MetricsNamespace,
		Dimensions: map[string]string{obs.DimFunction: FunctionName},
		Metrics:    []emf.Metric{emf.Counter(MetricContractConflicts, 1)},
		Properties: map[string]any{obs.KeyEventID: env.EventID, obs.KeyEnrollmentID: p.EnrollmentID},
		Timestamp:  n.now(),
	}.Emit(n.metrics)
	if err != nil {
		n.log.WarnContext(ctx, "could not emit metrics", obs.Err(err))
	}
}

// record applies a status change for an outcome, with cause as the last
// error, and returns cause. If the change cannot be written, the result is
// a transient error instead, so the message is delivered again and the
// outcome recorded then.
func (n *Notifier) record(ctx context.Context, enrollmentID string, change enrollment.NotificationChange, cause error) error {
	change = change.WithLastError(lastError(cause))
	if _, err := n.store.ChangeNotification(ctx, enrollmentID, change); err != nil {
		return fmt.Errorf("notify enrollment %s: record outcome of %q: %w", enrollmentID, cause.Error(), err)
	}
	return cause
}

// retryLater records the failed attempt's error and returns the transient
// cause; on the last attempt (the retry budget is spent) a pending
// notification is recorded as failed instead (an unknown one stays
// unknown: the provider may have the message).
func (n *Notifier) retryLater(ctx context.Context, enrollmentID string, lastAttempt bool, cause error) error {
	if !lastAttempt {
		return n.record(ctx, enrollmentID, enrollment.RetryChange(), cause)
	}
	return n.record(ctx, enrollmentID, enrollment.GiveUpChange(), cause)
}

// lastError is an error as a notification keeps it: without personal data.
func lastError(err error) string {
	return obs.RedactText(err.Error())
}
