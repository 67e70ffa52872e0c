package enrollment_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/store/memstore"
)

// countingStore counts Create calls and can fail them.
type countingStore struct {
	enrollment.Store
	creates atomic.Int32
	fail    error
}

func (s *countingStore) Create(ctx context.Context, c enrollment.Creation) error {
	s.creates.Add(1)
	if s.fail != nil {
		return s.fail
	}
	return s.Store.Create(ctx, c)
}

type failingProfiles struct{}

func (failingProfiles) Get(context.Context, string) (profile.Profile, error) {
	return profile.Profile{}, errors.New("profiles unavailable")
}

type setup struct {
	mem   *memstore.Store
	store *countingStore
	svc   *enrollment.Service
	class class.Class
}

func newSetup(t *testing.T, d enrollment.Deps) *setup {
	t.Helper()
	mem := memstore.New()
	cs := &countingStore{Store: mem.Enrollments}
	d.Store, d.Classes, d.Idempotency = cs, mem.Classes, mem.Idempotency
	if d.Profiles == nil {
		d.Profiles = mem.Profiles
	}
	svc, err := enrollment.NewService(d)
	require.NoError(t, err)
	c, err := class.New("c-1", "teacher-1", "Go", 2, time.Date(2026, 4, 1, 17, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	require.NoError(t, mem.Classes.Create(context.Background(), c))
	return &setup{mem: mem, store: cs, svc: svc, class: c}
}

func request(student, key string) enrollment.EnrollRequest {
	fp, err := idempotency.Fingerprint("POST", "/classes/c-1/enrollments", nil, student)
	if err != nil {
		panic(err)
	}
	return enrollment.EnrollRequest{
		ClassID: "c-1", StudentID: student, IdempotencyKey: key, RequestFingerprint: fp,
		Respond: func(e enrollment.Enrollment) (idempotency.Response, error) {
			return idempotency.Response{Status: 201, Body: []byte(e.ID())}, nil
		},
	}
}

func TestNewServiceChecksDeps(t *testing.T) {
	t.Parallel()
	_, err := enrollment.NewService(enrollment.Deps{})
	require.ErrorContains(t, err, "Store")
	require.ErrorContains(t, err, "Classes", "all problems at once")
	require.ErrorContains(t, err, "Idempotency")

	mem := memstore.New()
	base := enrollment.Deps{Store: mem.Enrollments, Classes: mem.Classes, Idempotency: mem.Idempotency}
	d := base
	d.Policy = "sometimes"
	_, err = enrollment.NewService(d)
	require.ErrorContains(t, err, "address policy")
	d = base
	d.Policy = profile.PolicyAtEnrollment
	_, err = enrollment.NewService(d)
	require.ErrorContains(t, err, "Profiles")
}

func TestEnrollUsesTheInjectedClockAndIDs(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	ids := []string{"11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"}
	var n atomic.Int32
	s := newSetup(t, enrollment.Deps{
		Now:   func() time.Time { return now },
		NewID: func() string { return ids[n.Add(1)-1] },
	})
	res, err := s.svc.Enroll(context.Background(), request("s-1", "key-00000001"))
	require.NoError(t, err)
	require.Equal(t, ids[0], res.Enrollment.ID())
	require.Equal(t, now, res.Enrollment.CreatedAt())
	require.Equal(t, []byte(ids[0]), res.Response.Body)
	row, err := s.mem.Outbox.Get(context.Background(), ids[1])
	require.NoError(t, err, "the event id is the second id")
	env, err := row.Envelope()
	require.NoError(t, err)
	require.Equal(t, 2, env.SchemaVersion)
	p, err := env.EnrollmentCreated()
	require.NoError(t, err)
	require.Equal(t, s.class.StartsAt(), *p.ClassStartsAt, "v2 carries the class start")
}

func TestEnrollRejectsBadRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		mutate  func(*enrollment.EnrollRequest)
		wantErr error
	}{
		{"missing key", func(r *enrollment.EnrollRequest) { r.IdempotencyKey = "" }, club.ErrIdempotencyKeyRequired},
		{"short key", func(r *enrollment.EnrollRequest) { r.IdempotencyKey = "short" }, club.ErrIdempotencyKeyRequired},
		{"no fingerprint", func(r *enrollment.EnrollRequest) { r.RequestFingerprint = "" }, nil},
		{"no renderer", func(r *enrollment.EnrollRequest) { r.Respond = nil }, nil},
		{"no student", func(r *enrollment.EnrollRequest) { r.StudentID = "" }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSetup(t, enrollment.Deps{})
			req := request("s-1", "key-00000001")
			tt.mutate(&req)
			_, err := s.svc.Enroll(context.Background(), req)
			require.Error(t, err)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
			}
			require.Zero(t, s.store.creates.Load(), "nothing attempted")
		})
	}
}

// A replay is answered from the idempotency record that the create
// transaction finds in its way: nothing new is stored.
func TestReplayStoresNothingNew(t *testing.T) {
	t.Parallel()
	s := newSetup(t, enrollment.Deps{})
	ctx := context.Background()
	first, err := s.svc.Enroll(ctx, request("s-1", "key-00000001"))
	require.NoError(t, err)
	for range 3 {
		again, err := s.svc.Enroll(ctx, request("s-1", "key-00000001"))
		require.NoError(t, err)
		require.True(t, again.Replayed)
		require.Equal(t, first.Response, again.Response)
		require.Zero(t, again.Enrollment.ID(), "no enrollment on replay")
	}
	rows, err := s.mem.Outbox.Unpublished(ctx, time.Now().Add(time.Hour), 10)
	require.NoError(t, err)
	require.Len(t, rows, 1, "one event")
	c, err := s.mem.Classes.Get(ctx, "c-1")
	require.NoError(t, err)
	require.Equal(t, 1, c.SeatsTaken(), "one seat")
}

// The same key for a class that does not exist is still a reused key: the
// earlier request's record comes first, as in the transaction.
func TestReusedKeyForAMissingClass(t *testing.T) {
	t.Parallel()
	s := newSetup(t, enrollment.Deps{})
	ctx := context.Background()
	_, err := s.svc.Enroll(ctx, request("s-1", "key-00000001"))
	require.NoError(t, err)
	other := request("s-1", "key-00000001")
	other.ClassID = "no-such-class"
	other.RequestFingerprint, err = idempotency.Fingerprint("POST", "/classes/no-such-class/enrollments", nil, "s-1")
	require.NoError(t, err)
	_, err = s.svc.Enroll(ctx, other)
	require.ErrorIs(t, err, club.ErrIdempotencyKeyReused)

	other.IdempotencyKey = "key-00000002"
	_, err = s.svc.Enroll(ctx, other)
	require.ErrorIs(t, err, club.ErrClassNotFound)
}

func TestEnrollFailures(t *testing.T) {
	t.Parallel()
	t.Run("store failure is wrapped, not classified", func(t *testing.T) {
		t.Parallel()
		s := newSetup(t, enrollment.Deps{})
		boom := errors.New("dynamodb unavailable")
		s.store.fail = boom
		_, err := s.svc.Enroll(context.Background(), request("s-1", "key-00000001"))
		require.ErrorIs(t, err, boom)
		require.NotErrorIs(t, err, club.ErrClassFull)
	})
	t.Run("renderer failure writes nothing", func(t *testing.T) {
		t.Parallel()
		s := newSetup(t, enrollment.Deps{})
		req := request("s-1", "key-00000001")
		req.Respond = func(enrollment.Enrollment) (idempotency.Response, error) {
			return idempotency.Response{}, errors.New("render")
		}
		_, err := s.svc.Enroll(context.Background(), req)
		require.ErrorContains(t, err, "render")
		require.Zero(t, s.store.creates.Load())
	})
	t.Run("profile store failure under at_enrollment", func(t *testing.T) {
		t.Parallel()
		s := newSetup(t, enrollment.Deps{Policy: profile.PolicyAtEnrollment, Profiles: failingProfiles{}})
		_, err := s.svc.Enroll(context.Background(), request("s-1", "key-00000001"))
		require.ErrorContains(t, err, "profiles unavailable")
		require.Zero(t, s.store.creates.Load(), "no seat without the address the policy requires")
	})
}

func TestEventsCarryNoPersonalData(t *testing.T) {
	t.Parallel()
	s := newSetup(t, enrollment.Deps{Policy: profile.PolicyAtEnrollment})
	ctx := context.Background()
	p, err := profile.New("s-1", "ann@example.com", "Ann Example", time.Now())
	require.NoError(t, err)
	require.NoError(t, s.mem.Profiles.Put(ctx, p))
	res, err := s.svc.Enroll(ctx, request("s-1", "key-00000001"))
	require.NoError(t, err)
	require.Equal(t, "ann@example.com", res.Enrollment.CapturedAddress())
	_, err = s.svc.Cancel(ctx, res.Enrollment.ID(), "s-1")
	require.NoError(t, err)
	rows, err := s.mem.Outbox.Unpublished(ctx, time.Now().Add(time.Hour), 10)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	for _, r := range rows {
		require.NotContains(t, string(r.Payload), "ann@example.com")
		require.NotContains(t, string(r.Payload), "Ann Example")
		_, err := events.Decode(r.Payload)
		require.NoError(t, err)
	}
}
