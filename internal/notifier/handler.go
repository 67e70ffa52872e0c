package notifier

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/mail"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/sqsconsumer"
)

// Dead-letter codes of the notifier, beside sqsconsumer's defaults.
const (
	codeNoAddress          = "no_address"
	codeEnrollmentNotFound = "enrollment_not_found"
	codeMailRejected       = "mail_rejected"
)

// batchConcurrency: the notifications of a batch are independent, so all ten
// go out at once. Sequentially, a slow provider (2 s a call) would hold a
// batch for 20 s, close to the function timeout; the provider's rate limit
// (429 with Retry-After) protects it from the burst.
const batchConcurrency = 10

// Handler turns SQS batches of the notifications queue into Notify calls.
//
// With a parking queue (sqsconsumer.Config.ParkingURL) and the Notifier's
// Breaker, owed mail waits out a provider outage almost for free: a mail
// the open breaker refuses is parked, with no write and no attempt, and
// stays there. The mail whose failure opened the breaker, and each failed
// probe's, becomes a prober: its copies carry the attribute AttrProber and
// it comes back when its breaker's next probe is due. When a send succeeds
// and a breaker closes, or a prober is sent (or settled for good) on any
// instance, the batch releases the parked mail back to the queue before it
// returns (docs/architecture.md, "Waiting out a mail outage").
//
// Breakers live in instances, and a message comes back to any instance, so
// the probers carry the promise: an instance parks a mail only while its
// breaker is open and its probe is not due, and then a prober of that
// breaker comes back after the parking (the failure that decided the
// breaker less than an interval ago made it). The first mail refused while
// the probe is in flight is not parked but probes next (RefusedDuringProbe):
// the probe in flight may end without calling the provider. The others
// refused during that probe are parked: one stand-in per probe is enough. A prober that
// reaches another instance's open breaker is parked like any mail: that
// breaker's own prober comes back later. Once the provider answers, probes
// stop failing, so within an interval a prober is sent and releases. A
// message delivered again by SQS (ApproximateReceiveCount above 1: its
// retry's copy could not be sent, or a delivery was repeated) cannot carry
// the attribute and counts as a prober.
type Handler struct {
	consumer *sqsconsumer.Consumer
	notifier *Notifier
	parking  bool
	log      *slog.Logger
}

// NewHandler wires the consumer of the notifications queue; queue carries
// the queue settings (URLs, MaxReceiveCount).
func NewHandler(queue sqsconsumer.Config, client sqsconsumer.SQS, n *Notifier, logger *slog.Logger) (*Handler, error) {
	queue.Name = FunctionName
	queue.Concurrency = batchConcurrency
	c, err := sqsconsumer.New(queue, client, logger)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Handler{consumer: c, notifier: n, parking: queue.ParkingURL != "" && n.breaker != nil, log: logger}, nil
}

// Handle processes one batch and reports the messages to retry; it never
// fails as a whole (see sqsconsumer.Consumer.Process).
func (h *Handler) Handle(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		ctx = obs.WithAttrs(ctx, obs.RequestID(lc.AwsRequestID))
	}
	// Decode the batch once, up front, to read its students' addresses in
	// one request; each message is then handled on its own.
	decoded := make(map[string]decodedEvent, len(ev.Records))
	var students []string
	for _, r := range ev.Records {
		env, err := events.Decode([]byte(r.Body))
		decoded[r.MessageId] = decodedEvent{env: env, err: err}
		if err != nil || env.Type != events.TypeEnrollmentCreated {
			continue
		}
		if p, err := env.EnrollmentCreated(); err == nil {
			students = append(students, p.StudentID)
		}
	}
	addresses := h.notifier.addresses
	if b, ok := addresses.(BatchAddresses); ok {
		addresses = b.ForBatch(ctx, students)
	}
	var s samples // the batch's metrics: one line for all its messages
	var proberDone atomic.Bool
	resp := h.consumer.Process(ctx, ev, func(ctx context.Context, m sqsconsumer.Message) error {
		d := decoded[m.ID]
		if d.err != nil {
			return d.err // permanent: the consumer dead-letters it with the decoding error as reason
		}
		if m.Attribute(sqsconsumer.AttrEventID) == "" {
			ctx = obs.WithAttrs(ctx, obs.EventID(d.env.EventID))
		}
		prober := h.parking && (m.Attribute(AttrProber) != "" || m.ReceiveCount > 1)
		err := h.toConsumer(h.notifier.notify(ctx, d.env, m.LastAttempt, addresses, &s), prober)
		if prober && sqsconsumer.Classify(err).Action != sqsconsumer.Retry {
			proberDone.Store(true)
		}
		return err
	})
	h.notifier.emit(ctx, &s)
	if proberDone.Load() {
		// Parked mail may wait on this prober, whichever instance parked
		// it: sent (or settled for good), it hands the wait on.
		h.notifier.breaker.ReleaseDue()
	}
	h.release(ctx)
	return resp, nil
}

// release moves the parked mail back to the queue if the breaker closed
// since the last release. If it cannot finish (an error, the invocation's
// time), the next invocation continues; what was moved is not moved twice.
func (h *Handler) release(ctx context.Context) {
	if !h.parking || !h.notifier.breaker.TakeRelease() {
		return
	}
	if deadline, ok := ctx.Deadline(); ok {
		// Stop between two batches, not in the middle of one, before the
		// invocation's time runs out.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-releaseMargin))
		defer cancel()
	}
	moved, err := h.consumer.Release(ctx)
	if err != nil {
		h.notifier.breaker.ReleaseDue()
		h.log.WarnContext(ctx, "could not release all parked mail; the next invocation continues", slog.Int("released", moved), obs.Err(err))
		return
	}
	h.log.InfoContext(ctx, "mail provider answers again; parked mail released", slog.Int("released", moved))
}

// decodedEvent is a message body decoded, or why it could not be.
type decodedEvent struct {
	env events.Envelope
	err error
}

// releaseMargin is the time a release leaves before the invocation's
// deadline: a batch of ten moved back takes three requests.
const releaseMargin = 2 * time.Second

// AttrProber is the message attribute of a mail that probes for parked
// mail (see Handler).
const AttrProber = "prober"

// toConsumer maps the notifier's permanent causes, the provider's
// Retry-After and, with parking, the breaker's answers to the consumer's
// classification; the rest (events sentinels, transient errors) the
// consumer classifies itself. prober says whether the message is a prober
// (see Handler).
func (h *Handler) toConsumer(err error, prober bool) error {
	if !h.parking || err == nil {
		return toConsumer(err)
	}
	if wait, ok := RefusedDuringProbe(err); ok {
		// The stand-in of the probe in flight: that probe may end without
		// a call (its mail needed none) and then leaves no prober behind,
		// so this mail probes next instead of being parked. One per probe.
		return sqsconsumer.Tag(sqsconsumer.RetryAfter(wait, err), AttrProber, "true")
	}
	if errors.Is(err, ErrCircuitOpen) {
		// Refused, prober or not, while the probe is not due: the refusing
		// breaker's own prober comes back after this parking, and releases
		// it.
		return sqsconsumer.Park(err)
	}
	if wait, ok := NextProbeIn(err); ok {
		// The breaker decided on this mail (it opened, or its probe
		// failed): it probes when that breaker's next probe is due.
		return sqsconsumer.Tag(sqsconsumer.RetryAfter(wait, err), AttrProber, "true")
	}
	if prober {
		return sqsconsumer.Tag(toConsumer(err), AttrProber, "true")
	}
	return toConsumer(err)
}

// toConsumer maps the notifier's permanent causes and the provider's
// Retry-After to the consumer's classification.
func toConsumer(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, profile.ErrNoAddress):
		return sqsconsumer.Permanent(codeNoAddress, err)
	case errors.Is(err, club.ErrNotFound):
		return sqsconsumer.Permanent(codeEnrollmentNotFound, err)
	case errors.Is(err, mail.ErrKeyReused):
		return sqsconsumer.Permanent(sqsconsumer.CodeContractConflict, err)
	case errors.Is(err, mail.ErrRejected):
		return sqsconsumer.Permanent(codeMailRejected, err)
	}
	if d, ok := mail.RetryAfter(err); ok {
		return sqsconsumer.RetryAfter(d, err)
	}
	return err
}
