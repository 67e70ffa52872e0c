package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/lease"
	"github.com/clubdev/club/internal/club/outbox"
	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/club/projection"
)

// EnrollmentStore is what the enrollment suites need from one implementation.
type EnrollmentStore interface {
	enrollment.Store
	enrollment.NotificationStore
}

// ProfileStore is what the profile suite needs from one implementation.
type ProfileStore interface {
	profile.Store
	enrollment.ProfileSeeder
	// GetMany reads several profiles at once (the notifier's batch read).
	GetMany(ctx context.Context, userIDs []string) (map[string]profile.Profile, error)
}

// Ports is one implementation of every port, over one shared state.
type Ports struct {
	Classes     class.Repository
	Enrollments EnrollmentStore
	Idempotency idempotency.Store
	Profiles    ProfileStore
	Inbox       projection.Inbox
	Projections projection.Reader
	Outbox      outbox.Store
	Leases      lease.Store
}

// Factory returns fresh, empty ports. It is called once per test case, from
// parallel tests.
type Factory func(t *testing.T) Ports

// RunAll runs every suite.
func RunAll(t *testing.T, newPorts Factory) {
	t.Run("ClassRepository", func(t *testing.T) { t.Parallel(); RunClassRepository(t, newPorts) })
	t.Run("EnrollmentStore", func(t *testing.T) { t.Parallel(); RunEnrollmentStore(t, newPorts) })
	t.Run("NotificationStore", func(t *testing.T) { t.Parallel(); RunNotificationStore(t, newPorts) })
	t.Run("ProfileStore", func(t *testing.T) { t.Parallel(); RunProfileStore(t, newPorts) })
	t.Run("Inbox", func(t *testing.T) { t.Parallel(); RunInbox(t, newPorts) })
	t.Run("OutboxStore", func(t *testing.T) { t.Parallel(); RunOutboxStore(t, newPorts) })
	t.Run("LeaseStore", func(t *testing.T) { t.Parallel(); RunLeaseStore(t, newPorts) })
}

// farFuture lists every pending outbox row regardless of age.
var farFuture = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

var startsAt = time.Date(2026, 4, 1, 17, 0, 0, 0, time.UTC)

// fixture is a service over one set of ports, with helpers for the facts the
// suites check.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	ports Ports
	svc   *enrollment.Service
}

func setup(t *testing.T, newPorts Factory, d enrollment.Deps) *fixture {
	t.Helper()
	p := newPorts(t)
	d.Store, d.Classes, d.Idempotency = p.Enrollments, p.Classes, p.Idempotency
	if d.Profiles == nil {
		d.Profiles = p.Profiles
	}
	svc, err := enrollment.NewService(d)
	require.NoError(t, err)
	return &fixture{t: t, ctx: context.Background(), ports: p, svc: svc}
}

func (f *fixture) class(capacity int) class.Class {
	f.t.Helper()
	c, err := class.New(events.NewID(), "teacher-1", "Go concurrency", capacity, startsAt)
	require.NoError(f.t, err)
	require.NoError(f.t, f.ports.Classes.Create(f.ctx, c))
	return c
}

// respond renders what the API would answer: the body depends on the
// enrollment, so a replay that returned a fresh rendering would be caught.
func respond(e enrollment.Enrollment) (idempotency.Response, error) {
	body, err := json.Marshal(map[string]any{
		"enrollment_id": e.ID(), "class_id": e.ClassID(), "student_id": e.StudentID(),
		"status": e.Status(), "created_at": e.CreatedAt(),
	})
	return idempotency.Response{Status: 201, Body: body}, err
}

func (f *fixture) request(classID, student, key string) enrollment.EnrollRequest {
	f.t.Helper()
	path := "/classes/" + classID + "/enrollments"
	fp, err := idempotency.Fingerprint("POST", path, nil, student)
	require.NoError(f.t, err)
	return enrollment.EnrollRequest{
		ClassID: classID, StudentID: student, IdempotencyKey: key, RequestFingerprint: fp, Respond: respond,
	}
}

func (f *fixture) enroll(classID, student, key string) (enrollment.EnrollResult, error) {
	return f.svc.Enroll(f.ctx, f.request(classID, student, key))
}

func (f *fixture) seatsTaken(classID string) int {
	f.t.Helper()
	c, err := f.ports.Classes.Get(f.ctx, classID)
	require.NoError(f.t, err)
	return c.SeatsTaken()
}

// pending returns every pending outbox row, decoded.
func (f *fixture) pending() []events.Envelope {
	f.t.Helper()
	rows, err := f.ports.Outbox.Unpublished(f.ctx, farFuture, 1000)
	require.NoError(f.t, err)
	out := make([]events.Envelope, 0, len(rows))
	for _, r := range rows {
		require.Equal(f.t, outbox.StatusPending, r.Status)
		env, err := r.Envelope()
		require.NoError(f.t, err, "outbox payloads are valid envelopes")
		require.Equal(f.t, r.EventID, env.EventID)
		require.Equal(f.t, r.Type, env.Type)
		require.Equal(f.t, r.AggregateID, env.AggregateID)
		out = append(out, env)
	}
	return out
}

func countType(envs []events.Envelope, t events.Type) int {
	n := 0
	for _, e := range envs {
		if e.Type == t {
			n++
		}
	}
	return n
}

// RunClassRepository checks class.Repository.
func RunClassRepository(t *testing.T, newPorts Factory) {
	t.Run("create and get", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c := f.class(12)
		got, err := f.ports.Classes.Get(f.ctx, c.ID())
		require.NoError(t, err)
		require.Equal(t, c.Snapshot(), got.Snapshot())
		require.Equal(t, 12, got.SeatsLeft())
	})
	t.Run("duplicate id", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c := f.class(3)
		other, err := class.New(c.ID(), "teacher-2", "Other", 5, startsAt)
		require.NoError(t, err)
		require.Error(t, f.ports.Classes.Create(f.ctx, other))
		got, err := f.ports.Classes.Get(f.ctx, c.ID())
		require.NoError(t, err)
		require.Equal(t, "teacher-1", got.TeacherID(), "the first class is untouched")
	})
	t.Run("unknown", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		_, err := f.ports.Classes.Get(f.ctx, "nope")
		require.ErrorIs(t, err, club.ErrClassNotFound)
	})
}

// RunEnrollmentStore checks enrollment.Store through the Service, whose
// rules depend on the store's conditions.
func RunEnrollmentStore(t *testing.T, newPorts Factory) {
	t.Run("enroll writes seat, enrollment, event and record together", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c := f.class(3)
		res, err := f.enroll(c.ID(), "student-1", "key-00000001")
		require.NoError(t, err)
		require.False(t, res.Replayed)
		e := res.Enrollment
		require.Equal(t, enrollment.StatusEnrolled, e.Status())
		require.Equal(t, enrollment.NotificationPending, e.Notification().Status())
		require.Equal(t, c.TeacherID(), e.TeacherID())

		require.Equal(t, 1, f.seatsTaken(c.ID()))
		stored, err := f.ports.Enrollments.Get(f.ctx, e.ID())
		require.NoError(t, err)
		require.Equal(t, e.Snapshot(), stored.Snapshot(), "what is returned is what is stored")

		envs := f.pending()
		require.Len(t, envs, 1)
		created, err := envs[0].EnrollmentCreated()
		require.NoError(t, err)
		require.Equal(t, events.EnrollmentCreated{EnrollmentID: e.ID(), ClassID: c.ID(), StudentID: "student-1", ClassStartsAt: &startsAt}, created)
		require.Equal(t, e.ID(), envs[0].AggregateID)
		require.True(t, e.CreatedAt().Equal(envs[0].OccurredAt))

		rec, err := f.ports.Idempotency.Get(f.ctx, "student-1", "key-00000001")
		require.NoError(t, err)
		require.Equal(t, res.Response, rec.Response)
		require.Equal(t, e.ID(), rec.ResourceID)
		_, err = f.ports.Idempotency.Get(f.ctx, "student-2", "key-00000001")
		require.ErrorIs(t, err, club.ErrNotFound, "keys are scoped by caller")
	})

	t.Run("same key and request replays without a second effect", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c := f.class(3)
		first, err := f.enroll(c.ID(), "student-1", "key-00000001")
		require.NoError(t, err)
		again, err := f.enroll(c.ID(), "student-1", "key-00000001")
		require.NoError(t, err)
		require.True(t, again.Replayed)
		require.Equal(t, first.Response, again.Response)
		require.Equal(t, 1, f.seatsTaken(c.ID()))
		require.Len(t, f.pending(), 1)
	})

	t.Run("same key with another request is refused", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c1, c2 := f.class(3), f.class(3)
		_, err := f.enroll(c1.ID(), "student-1", "key-00000001")
		require.NoError(t, err)
		_, err = f.enroll(c2.ID(), "student-1", "key-00000001")
		require.ErrorIs(t, err, club.ErrIdempotencyKeyReused)
		require.Zero(t, f.seatsTaken(c2.ID()))
		require.Len(t, f.pending(), 1)
	})

	t.Run("other callers may use the same key", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c := f.class(3)
		for _, s := range []string{"student-1", "student-2"} {
			res, err := f.enroll(c.ID(), s, "shared-key-1")
			require.NoError(t, err)
			require.False(t, res.Replayed)
		}
		require.Equal(t, 2, f.seatsTaken(c.ID()))
	})

	t.Run("second enrollment of a student", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c := f.class(3)
		_, err := f.enroll(c.ID(), "student-1", "key-00000001")
		require.NoError(t, err)
		_, err = f.enroll(c.ID(), "student-1", "key-00000002")
		require.ErrorIs(t, err, club.ErrAlreadyEnrolled)
		require.Equal(t, 1, f.seatsTaken(c.ID()))
		require.Len(t, f.pending(), 1)
		_, err = f.ports.Idempotency.Get(f.ctx, "student-1", "key-00000002")
		require.ErrorIs(t, err, club.ErrNotFound, "a failed request stores no record")
	})

	t.Run("already enrolled wins over class full", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c := f.class(1)
		_, err := f.enroll(c.ID(), "student-1", "key-00000001")
		require.NoError(t, err)
		_, err = f.enroll(c.ID(), "student-1", "key-00000002")
		require.ErrorIs(t, err, club.ErrAlreadyEnrolled)
	})

	t.Run("unknown class", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		_, err := f.enroll("no-such-class", "student-1", "key-00000001")
		require.ErrorIs(t, err, club.ErrClassNotFound)
		require.Empty(t, f.pending())
	})

	t.Run("store reports a missing class", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c, err := class.New("ghost", "teacher-1", "Ghost", 5, startsAt)
		require.NoError(t, err)
		err = f.ports.Enrollments.Create(f.ctx, creation(t, c, "student-1", "key-00000001"))
		require.ErrorIs(t, err, club.ErrClassNotFound)
	})

	t.Run("full class", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c := f.class(1)
		_, err := f.enroll(c.ID(), "student-1", "key-00000001")
		require.NoError(t, err)
		_, err = f.enroll(c.ID(), "student-2", "key-00000002")
		require.ErrorIs(t, err, club.ErrClassFull)
		require.Equal(t, 1, f.seatsTaken(c.ID()))
		require.Len(t, f.pending(), 1)
	})

	t.Run("existing idempotency record wins and carries the record", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c := f.class(1)
		first, err := f.enroll(c.ID(), "student-1", "key-00000001")
		require.NoError(t, err)
		// The class is full and the student enrolled, but the key decides.
		err = f.ports.Enrollments.Create(f.ctx, creation(t, c, "student-1", "key-00000001"))
		exists, ok := errors.AsType[*idempotency.ExistsError](err)
		require.True(t, ok, "want *idempotency.ExistsError, got %v", err)
		require.Equal(t, first.Response, exists.Record.Response)
		require.Equal(t, 1, f.seatsTaken(c.ID()))
	})

	t.Run("last seats race: 50 students, 5 seats", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c := f.class(5)
		var ok, full, other atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 50 {
			wg.Go(func() {
				<-start
				_, err := f.enroll(c.ID(), fmt.Sprintf("student-%02d", i), fmt.Sprintf("race-key-%02d", i))
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, club.ErrClassFull):
					full.Add(1)
				default:
					t.Errorf("student %d: unexpected error %v", i, err)
					other.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		require.EqualValues(t, 5, ok.Load())
		require.EqualValues(t, 45, full.Load())
		require.Equal(t, 5, f.seatsTaken(c.ID()))
		envs := f.pending()
		require.Len(t, envs, 5)
		students := map[string]bool{}
		for _, env := range envs {
			p, err := env.EnrollmentCreated()
			require.NoError(t, err)
			students[p.StudentID] = true
		}
		require.Len(t, students, 5, "five different students got the seats")
	})

	t.Run("double click: concurrent duplicates make one enrollment", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c := f.class(5)
		results := make([]enrollment.EnrollResult, 10)
		errs := make([]error, 10)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range results {
			wg.Go(func() {
				<-start
				results[i], errs[i] = f.enroll(c.ID(), "student-1", "double-click")
			})
		}
		close(start)
		wg.Wait()
		fresh := 0
		for i := range results {
			require.NoError(t, errs[i])
			if !results[i].Replayed {
				fresh++
			}
			require.Equal(t, results[0].Response, results[i].Response, "every caller sees the same answer")
		}
		require.Equal(t, 1, fresh)
		require.Equal(t, 1, f.seatsTaken(c.ID()))
		require.Len(t, f.pending(), 1)
	})

	t.Run("cancel frees the seat and emits once", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c := f.class(1)
		res, err := f.enroll(c.ID(), "student-1", "key-00000001")
		require.NoError(t, err)
		id := res.Enrollment.ID()

		_, err = f.svc.Cancel(f.ctx, id, "student-2")
		require.ErrorIs(t, err, club.ErrNotFound, "only its student may cancel")
		_, err = f.svc.Cancel(f.ctx, id, c.TeacherID())
		require.ErrorIs(t, err, club.ErrNotFound, "not even the teacher")

		cancelled, err := f.svc.Cancel(f.ctx, id, "student-1")
		require.NoError(t, err)
		require.Equal(t, enrollment.StatusCancelled, cancelled.Status())
		require.False(t, cancelled.CancelledAt().IsZero())
		require.Zero(t, f.seatsTaken(c.ID()))
		stored, err := f.ports.Enrollments.Get(f.ctx, id)
		require.NoError(t, err)
		require.Equal(t, cancelled.Snapshot(), stored.Snapshot())

		again, err := f.svc.Cancel(f.ctx, id, "student-1")
		require.NoError(t, err, "cancel is idempotent")
		require.Equal(t, cancelled.Snapshot(), again.Snapshot())
		require.Zero(t, f.seatsTaken(c.ID()), "no second seat freed")

		envs := f.pending()
		require.Equal(t, 1, countType(envs, events.TypeEnrollmentCreated))
		require.Equal(t, 1, countType(envs, events.TypeEnrollmentCancelled))
		for _, env := range envs {
			if env.Type == events.TypeEnrollmentCancelled {
				p, err := env.EnrollmentCancelled()
				require.NoError(t, err)
				require.Equal(t, events.EnrollmentCancelled{EnrollmentID: id, ClassID: c.ID(), StudentID: "student-1"}, p)
			}
		}

		// The freed seat and the student's claim are really free.
		_, err = f.enroll(c.ID(), "student-2", "key-00000002")
		require.NoError(t, err)
		_, err = f.enroll(c.ID(), "student-1", "key-00000003")
		require.ErrorIs(t, err, club.ErrClassFull)
	})

	t.Run("re-enrolling after cancelling", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c := f.class(2)
		first, err := f.enroll(c.ID(), "student-1", "key-00000001")
		require.NoError(t, err)
		_, err = f.svc.Cancel(f.ctx, first.Enrollment.ID(), "student-1")
		require.NoError(t, err)
		second, err := f.enroll(c.ID(), "student-1", "key-00000002")
		require.NoError(t, err)
		require.NotEqual(t, first.Enrollment.ID(), second.Enrollment.ID())
		require.Equal(t, 1, f.seatsTaken(c.ID()))
	})

	t.Run("concurrent cancels free one seat", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c := f.class(3)
		for i := range 2 {
			_, err := f.enroll(c.ID(), fmt.Sprintf("other-%d", i), fmt.Sprintf("other-key-%d", i))
			require.NoError(t, err)
		}
		res, err := f.enroll(c.ID(), "student-1", "key-00000001")
		require.NoError(t, err)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 10 {
			wg.Go(func() {
				<-start
				e, err := f.svc.Cancel(f.ctx, res.Enrollment.ID(), "student-1")
				if err != nil {
					t.Errorf("cancel: %v", err)
					return
				}
				if e.Status() != enrollment.StatusCancelled {
					t.Errorf("status %s after cancel", e.Status())
				}
			})
		}
		close(start)
		wg.Wait()
		require.Equal(t, 2, f.seatsTaken(c.ID()))
		require.Equal(t, 1, countType(f.pending(), events.TypeEnrollmentCancelled))
	})

	t.Run("cancel of an unknown enrollment", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		_, err := f.svc.Cancel(f.ctx, "nope", "student-1")
		require.ErrorIs(t, err, club.ErrNotFound)
		c, err := class.New(events.NewID(), "t", "T", 1, startsAt)
		require.NoError(t, err)
		e, err := enrollment.New("nope", c.ID(), "student-1", "t", time.Now())
		require.NoError(t, err)
		require.NoError(t, e.Cancel(time.Now()))
		env, err := events.New(events.NewID(), time.Now(), events.EnrollmentCancelled{EnrollmentID: "nope", ClassID: c.ID(), StudentID: "student-1"})
		require.NoError(t, err)
		err = f.ports.Enrollments.Cancel(f.ctx, enrollment.Cancellation{Enrollment: e, Event: env})
		require.ErrorIs(t, err, club.ErrNotFound)
	})

	t.Run("visibility", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c := f.class(2)
		res, err := f.enroll(c.ID(), "student-1", "key-00000001")
		require.NoError(t, err)
		for _, who := range []string{"student-1", c.TeacherID()} {
			got, err := f.svc.Get(f.ctx, res.Enrollment.ID(), who)
			require.NoError(t, err, who)
			require.Equal(t, res.Enrollment.ID(), got.ID())
		}
		for _, who := range []string{"student-2", "", "teacher-2"} {
			_, err := f.svc.Get(f.ctx, res.Enrollment.ID(), who)
			require.ErrorIs(t, err, club.ErrNotFound, who)
		}
		_, err = f.svc.Get(f.ctx, "nope", "student-1")
		require.ErrorIs(t, err, club.ErrNotFound)
	})

	t.Run("address policies", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			policy     profile.AddressPolicy
			profile    string // "" = no profile
			tokenEmail string
			want       string
		}{
			{profile.PolicyCurrent, "p@example.com", "t@example.com", ""},
			{profile.PolicyAtEnrollment, "p@example.com", "t@example.com", "p@example.com"},
			{profile.PolicyAtEnrollment, "", "t@example.com", "t@example.com"},
			{profile.PolicyAtEnrollment, "", "", ""},
		}
		for _, tt := range tests {
			f := setup(t, newPorts, enrollment.Deps{Policy: tt.policy})
			if tt.profile != "" {
				p, err := profile.New("student-1", tt.profile, "Ann", time.Now())
				require.NoError(t, err)
				require.NoError(t, f.ports.Profiles.Put(f.ctx, p))
			}
			c := f.class(1)
			req := f.request(c.ID(), "student-1", "key-00000001")
			req.TokenEmail = tt.tokenEmail
			res, err := f.svc.Enroll(f.ctx, req)
			require.NoError(t, err)
			stored, err := f.ports.Enrollments.Get(f.ctx, res.Enrollment.ID())
			require.NoError(t, err)
			require.Equal(t, tt.want, stored.CapturedAddress(), "%+v", tt)
			for _, env := range f.pending() {
				require.NotContains(t, string(env.Data), "@", "no address in events")
			}
		}
	})
}

// creation builds a Creation for a class directly, bypassing the Service.
func creation(t *testing.T, c class.Class, student, key string) enrollment.Creation {
	t.Helper()
	now := time.Now().UTC()
	e, err := enrollment.New(events.NewID(), c.ID(), student, c.TeacherID(), now)
	require.NoError(t, err)
	env, err := events.New(events.NewID(), now, events.EnrollmentCreated{EnrollmentID: e.ID(), ClassID: c.ID(), StudentID: student})
	require.NoError(t, err)
	resp, err := respond(e)
	require.NoError(t, err)
	fp, err := idempotency.Fingerprint("POST", "/classes/"+c.ID()+"/enrollments", nil, student)
	require.NoError(t, err)
	return enrollment.Creation{Enrollment: e, Event: env, Idempotency: idempotency.Record{
		Caller: student, Key: key, Fingerprint: fp, Response: resp, ResourceID: e.ID(), CreatedAt: now,
	}}
}

// RunNotificationStore checks enrollment.NotificationStore.
func RunNotificationStore(t *testing.T, newPorts Factory) {
	enrolled := func(t *testing.T) (*fixture, enrollment.Enrollment) {
		f := setup(t, newPorts, enrollment.Deps{})
		c := f.class(2)
		res, err := f.enroll(c.ID(), "student-1", "key-00000001")
		require.NoError(t, err)
		return f, res.Enrollment
	}
	change := func(t *testing.T, f *fixture, id string, c enrollment.NotificationChange) enrollment.Notification {
		t.Helper()
		got, err := f.ports.Enrollments.ChangeNotification(f.ctx, id, c)
		require.NoError(t, err)
		stored, err := f.ports.Enrollments.Get(f.ctx, id)
		require.NoError(t, err)
		require.Equal(t, stored.Notification(), got.Notification(), "the answer is the notification as stored")
		return stored.Notification()
	}
	t.Run("attempt, then sent", func(t *testing.T) {
		t.Parallel()
		f, e := enrolled(t)
		require.Equal(t, 1, change(t, f, e.ID(), enrollment.BeginAttemptChange()).Attempts())
		sentAt := time.Date(2026, 3, 1, 10, 0, 1, 500, time.UTC)
		n := change(t, f, e.ID(), enrollment.SentChange(sentAt))
		require.Equal(t, enrollment.NotificationSent, n.Status())
		require.Equal(t, 1, n.Attempts())
		require.True(t, sentAt.Equal(n.SentAt()))
		stored, err := f.ports.Enrollments.Get(f.ctx, e.ID())
		require.NoError(t, err)
		require.Equal(t, enrollment.StatusEnrolled, stored.Status(), "other fields untouched")

		_, err = f.ports.Enrollments.ChangeNotification(f.ctx, e.ID(), enrollment.BeginAttemptChange())
		require.ErrorIs(t, err, enrollment.ErrAlreadySent)
		n = change(t, f, e.ID(), enrollment.SentChange(sentAt.Add(time.Hour)))
		require.Equal(t, 1, n.Attempts(), "a refused change writes nothing")
		require.True(t, sentAt.Equal(n.SentAt()), "sent keeps its first time")
		require.Equal(t, enrollment.NotificationSent, change(t, f, e.ID(), enrollment.FailedChange()).Status(), "sent is final")
	})
	t.Run("every case of every change, as the domain applies it", func(t *testing.T) {
		t.Parallel()
		changes := map[string]enrollment.NotificationChange{
			"begin": enrollment.BeginAttemptChange(), "failed": enrollment.FailedChange(),
			"unknown": enrollment.UnknownChange(), "give up": enrollment.GiveUpChange().WithLastError("deadline passed"),
			"retry":  enrollment.RetryChange().WithLastError("503 provider_unavailable"),
			"cancel": enrollment.CancelledChange(), "sent": enrollment.SentChange(time.Date(2026, 3, 1, 10, 0, 2, 0, time.UTC)),
		}
		// Each start status is reached through the store, then each change
		// applied there must give what Notification.Apply gives (the last
		// error included: a sent notification has none).
		starts := map[enrollment.NotificationStatus][]enrollment.NotificationChange{
			enrollment.NotificationPending:   nil,
			enrollment.NotificationFailed:    {enrollment.FailedChange().WithLastError("mail_rejected")},
			enrollment.NotificationUnknown:   {enrollment.UnknownChange().WithLastError("no answer")},
			enrollment.NotificationCancelled: {enrollment.CancelledChange()},
		}
		f := setup(t, newPorts, enrollment.Deps{})
		c12 := f.class(len(starts) * len(changes))
		n := 0
		for status, path := range starts {
			for name, c := range changes {
				n++
				res, err := f.enroll(c12.ID(), fmt.Sprintf("student-%d", n), fmt.Sprintf("key-%08d", n))
				require.NoError(t, err)
				e := res.Enrollment
				want := e.Notification()
				for _, step := range append(path, c) {
					_ = want.Apply(step)
				}
				for _, step := range path {
					change(t, f, e.ID(), step)
				}
				require.Equal(t, want, change(t, f, e.ID(), c), "%s from %s", name, status)
			}
		}
	})
	t.Run("no lost attempts under concurrency", func(t *testing.T) {
		t.Parallel()
		f, e := enrolled(t)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 8 {
			wg.Go(func() {
				<-start
				if _, err := f.ports.Enrollments.ChangeNotification(f.ctx, e.ID(), enrollment.BeginAttemptChange()); err != nil {
					t.Errorf("change: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		stored, err := f.ports.Enrollments.Get(f.ctx, e.ID())
		require.NoError(t, err)
		require.Equal(t, 8, stored.Notification().Attempts(), "every attempt counted once")
	})
	t.Run("cancel keeps the notification", func(t *testing.T) {
		t.Parallel()
		f, e := enrolled(t)
		change(t, f, e.ID(), enrollment.BeginAttemptChange())
		change(t, f, e.ID(), enrollment.SentChange(time.Now()))
		// e was read before the notification changed; cancelling with it
		// must not write its stale notification back.
		_, err := f.svc.Cancel(f.ctx, e.ID(), "student-1")
		require.NoError(t, err)
		stored, err := f.ports.Enrollments.Get(f.ctx, e.ID())
		require.NoError(t, err)
		require.Equal(t, enrollment.StatusCancelled, stored.Status())
		require.Equal(t, enrollment.NotificationSent, stored.Notification().Status())
	})
	t.Run("unknown enrollment", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		for _, c := range []enrollment.NotificationChange{enrollment.BeginAttemptChange(), enrollment.SentChange(time.Now()), enrollment.GiveUpChange()} {
			_, err := f.ports.Enrollments.ChangeNotification(f.ctx, "nope", c)
			require.ErrorIs(t, err, club.ErrNotFound)
		}
	})
}

// RunProfileStore checks profile.Store and enrollment.ProfileSeeder.
func RunProfileStore(t *testing.T, newPorts Factory) {
	t.Run("create if absent never overwrites", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		seeded, err := profile.FromToken("u-1", "ann@example.com", time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
		require.NoError(t, err)
		created, err := p.Profiles.CreateIfAbsent(ctx, seeded)
		require.NoError(t, err)
		require.True(t, created)
		got, err := p.Profiles.Get(ctx, "u-1")
		require.NoError(t, err)
		require.Equal(t, seeded, got)

		chosen, err := profile.New("u-1", "ann@example.org", "Ann B.", time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))
		require.NoError(t, err)
		require.NoError(t, p.Profiles.Put(ctx, chosen))
		created, err = p.Profiles.CreateIfAbsent(ctx, seeded)
		require.NoError(t, err)
		require.False(t, created)
		got, err = p.Profiles.Get(ctx, "u-1")
		require.NoError(t, err)
		require.Equal(t, chosen, got, "the user's own profile is kept")
	})
	t.Run("put, replace, get", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		_, err := p.Profiles.Get(ctx, "u-1")
		require.ErrorIs(t, err, club.ErrNotFound)
		first, err := profile.New("u-1", "ann@example.com", "Ann", time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
		require.NoError(t, err)
		require.NoError(t, p.Profiles.Put(ctx, first))
		second, err := profile.New("u-1", "ann@example.org", "Ann B.", time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))
		require.NoError(t, err)
		require.NoError(t, p.Profiles.Put(ctx, second))
		got, err := p.Profiles.Get(ctx, "u-1")
		require.NoError(t, err)
		require.Equal(t, second, got)
	})
	t.Run("get many", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		want := map[string]profile.Profile{}
		var ids []string
		for i := range 120 { // more than one BatchGetItem holds
			id := fmt.Sprintf("u-%d", i)
			ids = append(ids, id, id) // asked twice: read once
			if i%3 == 0 {
				continue // no profile
			}
			pr, err := profile.New(id, id+"@example.com", "User", time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
			require.NoError(t, err)
			require.NoError(t, p.Profiles.Put(ctx, pr))
			want[id] = pr
		}
		got, err := p.Profiles.GetMany(ctx, ids)
		require.NoError(t, err)
		require.Equal(t, want, got, "every profile there is, none for users without one")
		none, err := p.Profiles.GetMany(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, none)
	})
}

// RunOutboxStore checks outbox.Store.
func RunOutboxStore(t *testing.T, newPorts Factory) {
	t.Run("mark published", func(t *testing.T) {
		t.Parallel()
		f := setup(t, newPorts, enrollment.Deps{})
		c := f.class(3)
		for i := range 3 {
			_, err := f.enroll(c.ID(), fmt.Sprintf("student-%d", i), fmt.Sprintf("key-0000000%d", i))
			require.NoError(t, err)
		}
		envs := f.pending()
		require.Len(t, envs, 3)
		id := envs[1].EventID
		at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		require.NoError(t, f.ports.Outbox.MarkPublished(f.ctx, id, at))
		require.NoError(t, f.ports.Outbox.MarkPublished(f.ctx, id, at.Add(time.Hour)), "idempotent")

		row, err := f.ports.Outbox.Get(f.ctx, id)
		require.NoError(t, err)
		require.Equal(t, outbox.StatusPublished, row.Status)
		require.True(t, at.Equal(row.PublishedAt), "the first mark is kept")
		env, err := row.Envelope()
		require.NoError(t, err)
		require.Equal(t, envs[1].Fingerprint(), env.Fingerprint(), "the payload never changes")

		rest := f.pending()
		require.Len(t, rest, 2)
		for _, e := range rest {
			require.NotEqual(t, id, e.EventID)
		}
		require.ErrorIs(t, f.ports.Outbox.MarkPublished(f.ctx, "0b6f3f4e-0000-4000-8000-000000000000", at), club.ErrNotFound)
		_, err = f.ports.Outbox.Get(f.ctx, "0b6f3f4e-0000-4000-8000-000000000000")
		require.ErrorIs(t, err, club.ErrNotFound)
	})
	t.Run("unpublished: oldest first, bounded by age and limit", func(t *testing.T) {
		t.Parallel()
		base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		var tick atomic.Int64
		clock := func() time.Time { return base.Add(time.Duration(tick.Add(1)) * time.Minute) }
		f := setup(t, newPorts, enrollment.Deps{Now: clock})
		c := f.class(20)
		for i := range 12 {
			_, err := f.enroll(c.ID(), fmt.Sprintf("student-%02d", i), fmt.Sprintf("key-%08d", i))
			require.NoError(t, err)
		}
		all, err := f.ports.Outbox.Unpublished(f.ctx, farFuture, 100)
		require.NoError(t, err)
		require.Len(t, all, 12)
		for i := 1; i < len(all); i++ {
			require.True(t, all[i-1].CreatedAt.Before(all[i].CreatedAt), "oldest first")
		}
		first5, err := f.ports.Outbox.Unpublished(f.ctx, farFuture, 5)
		require.NoError(t, err)
		require.Equal(t, all[:5], first5)

		older, err := f.ports.Outbox.Unpublished(f.ctx, all[4].CreatedAt, 100)
		require.NoError(t, err)
		require.Equal(t, all[:4], older, "strictly before the threshold")

		for _, r := range all[:3] {
			require.NoError(t, f.ports.Outbox.MarkPublished(f.ctx, r.EventID, base))
		}
		left, err := f.ports.Outbox.Unpublished(f.ctx, farFuture, 2)
		require.NoError(t, err)
		require.Equal(t, all[3:5], left)
	})
}

// RunLeaseStore checks lease.Store.
func RunLeaseStore(t *testing.T, newPorts Factory) {
	t.Run("acquire, renew, expire, release", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		ctx := context.Background()
		now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

		l, err := p.Leases.Acquire(ctx, "sweeper", "a", now, time.Minute)
		require.NoError(t, err)
		require.Equal(t, lease.Lease{Name: "sweeper", Owner: "a", ExpiresAt: now.Add(time.Minute)}, l)
		_, err = p.Leases.Acquire(ctx, "sweeper", "b", now.Add(30*time.Second), time.Minute)
		require.ErrorIs(t, err, lease.ErrHeld)
		_, err = p.Leases.Acquire(ctx, "other-work", "b", now, time.Minute)
		require.NoError(t, err, "leases are per name")

		_, err = p.Leases.Acquire(ctx, "sweeper", "a", now.Add(50*time.Second), time.Minute)
		require.NoError(t, err, "the owner renews")
		_, err = p.Leases.Acquire(ctx, "sweeper", "b", now.Add(100*time.Second), time.Minute)
		require.ErrorIs(t, err, lease.ErrHeld, "the renewal extended it")

		_, err = p.Leases.Acquire(ctx, "sweeper", "b", now.Add(110*time.Second), time.Minute)
		require.NoError(t, err, "expired leases are free")

		require.NoError(t, p.Leases.Release(ctx, "sweeper", "a"), "releasing another's lease is a no-op")
		_, err = p.Leases.Acquire(ctx, "sweeper", "c", now.Add(111*time.Second), time.Minute)
		require.ErrorIs(t, err, lease.ErrHeld)
		require.NoError(t, p.Leases.Release(ctx, "sweeper", "b"))
		_, err = p.Leases.Acquire(ctx, "sweeper", "c", now.Add(112*time.Second), time.Minute)
		require.NoError(t, err)
	})
	t.Run("one winner among concurrent owners", func(t *testing.T) {
		t.Parallel()
		p := newPorts(t)
		now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
		var won atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 20 {
			wg.Go(func() {
				<-start
				_, err := p.Leases.Acquire(context.Background(), "sweeper", fmt.Sprintf("owner-%d", i), now, time.Minute)
				if err == nil {
					won.Add(1)
				} else if !errors.Is(err, lease.ErrHeld) {
					t.Errorf("owner %d: %v", i, err)
				}
			})
		}
		close(start)
		wg.Wait()
		require.EqualValues(t, 1, won.Load())
	})
}
