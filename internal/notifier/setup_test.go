package notifier

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/clock"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/mail"
	"github.com/clubdev/club/internal/obs"
	mailsandbox "github.com/clubdev/club/internal/sandbox/mail"
	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/sqsconsumer/sqsconsumertest"
	"github.com/clubdev/club/internal/store/memstore"
)

// enrolledAt is when every test enrollment happens; the notifier's clock
// runs latency after it.
var (
	enrolledAt = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	startsAt   = time.Date(2026, 3, 15, 17, 0, 0, 0, time.UTC)
)

const (
	latency         = 1500 * time.Millisecond
	maxReceiveCount = 8
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a batch.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines parses every line written as a JSON object.
func (b *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "line %s", sc.Text())
		out = append(out, m)
	}
	return out
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// fixture is the notifier wired as in main, over the in-memory store, the
// mail sandbox served in-process and a recording stand-in for SQS.
type fixture struct {
	store   *memstore.Store
	sandbox *mailsandbox.Server
	sqs     *sqsconsumertest.SQS
	handler *Handler
	enroll  *enrollment.Service
	class   class.Class
	logs    *syncBuffer
	metrics *syncBuffer
	// instance wires another instance of the notifier (with its own
	// breaker, nil for none) over the same store, provider and queues.
	instance func(t *testing.T, breaker *Breaker) *Handler
	seq      atomic.Int64
	// profileReads counts the notifier's profile reads: one per Get, one
	// per GetMany.
	profileReads atomic.Int64
}

// countingProfiles counts the reads of the profiles it wraps.
type countingProfiles struct {
	ProfileReader
	f *fixture
}

func (c *countingProfiles) Get(ctx context.Context, userID string) (profile.Profile, error) {
	c.f.profileReads.Add(1)
	return c.ProfileReader.Get(ctx, userID)
}

func (c *countingProfiles) GetMany(ctx context.Context, userIDs []string) (map[string]profile.Profile, error) {
	c.f.profileReads.Add(1)
	return c.ProfileReader.GetMany(ctx, userIDs)
}

type options struct {
	policy profile.AddressPolicy
	// sandbox configures the mail sandbox; its clock is frozen unless set.
	sandbox mailsandbox.Options
	// budget is the consumer's retry budget in time (none unless set).
	budget time.Duration
	// breaker, when set, is asked before each send and parks what it
	// refuses in parkingURL (budget must be set).
	breaker *Breaker
}

// The notifications queue, and the parking queue of the handlers set up
// with a breaker.
const (
	queueURL   = "https://sqs.us-east-1.amazonaws.com/000000000000/club-notifications"
	parkingURL = queueURL + "-parking"
)

func setup(t *testing.T, opts options) *fixture {
	t.Helper()
	if opts.policy == "" {
		opts.policy = profile.PolicyCurrent
	}
	if opts.sandbox.Clock == nil {
		opts.sandbox.Clock = clock.NewFake(enrolledAt)
	}
	f := &fixture{store: memstore.New(), sandbox: mailsandbox.New(opts.sandbox), sqs: &sqsconsumertest.SQS{}, logs: &syncBuffer{}, metrics: &syncBuffer{}}
	hs := httptest.NewServer(f.sandbox)
	t.Cleanup(hs.Close)
	t.Cleanup(func() { require.NoError(t, f.sandbox.Shutdown(context.Background())) })

	ctx := context.Background()
	var err error
	f.class, err = class.New(events.NewID(), "teacher-1", "Go for beginners", 100, startsAt)
	require.NoError(t, err)
	require.NoError(t, f.store.Classes.Create(ctx, f.class))
	f.enroll, err = enrollment.NewService(enrollment.Deps{
		Store: f.store.Enrollments, Classes: f.store.Classes, Idempotency: f.store.Idempotency,
		Policy: opts.policy, Profiles: f.store.Profiles, Now: func() time.Time { return enrolledAt },
	})
	require.NoError(t, err)

	mailer, err := mail.New(mail.Config{BaseURL: hs.URL, Timeout: 2 * time.Second})
	require.NoError(t, err)
	logger := obs.NewLogger(f.logs, obs.Options{Level: slog.LevelDebug, Function: FunctionName})
	f.instance = func(t *testing.T, breaker *Breaker) *Handler {
		t.Helper()
		var m Mailer = mailer
		var parking string
		if breaker != nil {
			breaker.Next, m, parking = mailer, breaker, parkingURL
		}
		n, err := NewNotifier(NotifierDeps{
			Store:     f.store.Enrollments,
			Addresses: Addresses{Policy: opts.policy, Profiles: &countingProfiles{ProfileReader: f.store.Profiles, f: f}},
			Mailer:    m,
			Breaker:   breaker,
			Logger:    logger,
			Metrics:   f.metrics,
			Now:       func() time.Time { return enrolledAt.Add(latency) },
		})
		require.NoError(t, err)
		h, err := NewHandler(sqsconsumer.Config{
			QueueURL: queueURL,
			DLQURL:   "https://sqs.us-east-1.amazonaws.com/000000000000/club-notifications-dlq",
			// The handler's other settings are main's; these two keep the
			// test's output quiet and its clock fixed.
			MaxReceiveCount: maxReceiveCount,
			Metrics:         f.metrics,
			RetryBudget:     opts.budget,
			ParkingURL:      parking,
			Now:             func() time.Time { return enrolledAt.Add(latency) },
		}, f.sqs, n, logger)
		require.NoError(t, err)
		return h
	}
	f.handler = f.instance(t, opts.breaker)
	return f
}

// student is one enrolled student and the event that announces it.
type student struct {
	id, email    string
	enrollmentID string
	event        events.Envelope
	body         string // the event as the queue delivers it
}

// enrollStudent gives a new student a profile (if email is set) and a seat,
// and returns the enrollment.created event from the outbox.
func (f *fixture) enrollStudent(t *testing.T, email string) student {
	t.Helper()
	ctx := context.Background()
	s := student{id: fmt.Sprintf("student-%d", f.seq.Add(1)), email: email}
	if email != "" {
		p, err := profile.New(s.id, email, "Student", enrolledAt)
		require.NoError(t, err)
		require.NoError(t, f.store.Profiles.Put(ctx, p))
	}
	path := "/classes/" + f.class.ID() + "/enrollments"
	fp, err := idempotency.Fingerprint("POST", path, nil, s.id)
	require.NoError(t, err)
	res, err := f.enroll.Enroll(ctx, enrollment.EnrollRequest{
		ClassID: f.class.ID(), StudentID: s.id, TokenEmail: email,
		IdempotencyKey: "key-" + s.id, RequestFingerprint: fp,
		Respond: func(e enrollment.Enrollment) (idempotency.Response, error) {
			return idempotency.Response{Status: 201, Body: []byte(`{}`)}, nil
		},
	})
	require.NoError(t, err)
	s.enrollmentID = res.Enrollment.ID()

	rows, err := f.store.Outbox.Unpublished(ctx, enrolledAt.Add(time.Hour), 1000)
	require.NoError(t, err)
	for _, row := range rows {
		env, err := row.Envelope()
		require.NoError(t, err)
		if env.AggregateID == s.enrollmentID && env.Type == events.TypeEnrollmentCreated {
			s.event, s.body = env, string(row.Payload)
			return s
		}
	}
	t.Fatalf("no enrollment.created event for %s in the outbox", s.enrollmentID)
	return s
}

// delivery is one SQS delivery of an event.
func (f *fixture) delivery(body string, receiveCount int) lambdaevents.SQSMessage {
	attrs := map[string]string{}
	if env, err := events.Decode([]byte(body)); err == nil {
		attrs["type"], attrs["event_id"] = string(env.Type), env.EventID
	}
	return sqsconsumertest.Record(fmt.Sprintf("msg-%d", f.seq.Add(1)), body, receiveCount, enrolledAt, attrs)
}

// redelivery is the delivery of a retry's copy, as the queue hands it
// back: its own message id, received once.
func (f *fixture) redelivery(c sqsconsumertest.Copy) lambdaevents.SQSMessage {
	return sqsconsumertest.Record(fmt.Sprintf("msg-%d", f.seq.Add(1)), c.Body, 1, enrolledAt, c.Attributes)
}

// deliver invokes the handler with one batch.
func (f *fixture) deliver(t *testing.T, records ...lambdaevents.SQSMessage) lambdaevents.SQSEventResponse {
	t.Helper()
	return f.deliverTo(t, f.handler, records...)
}

// deliverTo invokes an instance (see fixture.instance) with one batch.
func (f *fixture) deliverTo(t *testing.T, h *Handler, records ...lambdaevents.SQSMessage) lambdaevents.SQSEventResponse {
	t.Helper()
	resp, err := h.Handle(context.Background(), sqsconsumertest.Event(records...))
	require.NoError(t, err)
	return resp
}

// notification returns the business status of a student's notification.
func (f *fixture) notification(t *testing.T, s student) enrollment.Notification {
	t.Helper()
	e, err := f.store.Enrollments.Get(context.Background(), s.enrollmentID)
	require.NoError(t, err)
	return e.Notification()
}

func (f *fixture) faults(t *testing.T, mode mailsandbox.FaultMode) {
	t.Helper()
	require.NoError(t, f.sandbox.SetFaults(mailsandbox.Faults{Mode: mode, Rate: 1}, nil))
}

func jsonOf(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
