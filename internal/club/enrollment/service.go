package enrollment

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/profile"
)

// Creation is everything the create transaction writes.
type Creation struct {
	Enrollment  Enrollment
	Event       events.Envelope // enrollment.created, for the outbox
	Idempotency idempotency.Record
}

// Cancellation is everything the cancel transaction writes.
type Cancellation struct {
	Enrollment Enrollment      // in its cancelled state
	Event      events.Envelope // enrollment.cancelled, for the outbox
}

// Store is the enrollment's persistence port.
type Store interface {
	// Create commits c in one transaction: one seat of c.Enrollment's class
	// (only if seats_taken < capacity), the enrollment (only if the student
	// holds no seat in the class), the outbox row of c.Event and the
	// idempotency record (only if caller and key are unused). On failure
	// nothing is written and the error is, by precedence:
	// *idempotency.ExistsError (with the stored record),
	// club.ErrAlreadyEnrolled, club.ErrClassNotFound, club.ErrClassFull,
	// club.ErrContention (transient), or an infrastructure error.
	Create(ctx context.Context, c Creation) error
	// Cancel commits c in one transaction: the status change (only from
	// enrolled), one seat given back, the student's claim on the class
	// released (so the student may enroll again) and the outbox row of
	// c.Event. If the enrollment is already cancelled it returns
	// ErrNotEnrolled and writes nothing; an unknown id is club.ErrNotFound.
	Cancel(ctx context.Context, c Cancellation) error
	// Get returns an enrollment or club.ErrNotFound (strongly consistent).
	Get(ctx context.Context, id string) (Enrollment, error)
}

// NotificationStore is the notifier's port.
type NotificationStore interface {
	// ChangeNotification applies c to the enrollment's notification
	// atomically, without a read in the usual case: each case of c is a
	// conditional write on the stored status, tried in order, and only when
	// none holds is the enrollment read, to tell c's refusal (returned
	// wrapped, nothing written) or a status c leaves as it is (nothing
	// written, no error) from a concurrent change (tried again, a bounded
	// number of times, then club.ErrContention). It returns the enrollment
	// as stored afterwards; club.ErrNotFound for an unknown id.
	ChangeNotification(ctx context.Context, id string, c NotificationChange) (Enrollment, error)
}

// ClassFinder reads classes; class.Repository satisfies it.
type ClassFinder interface {
	Get(ctx context.Context, id string) (class.Class, error)
}

// ProfileSeeder gives a student a first profile; the profile stores of
// package store and memstore implement it.
type ProfileSeeder interface {
	profile.Finder
	// CreateIfAbsent stores p only if p.UserID has no profile yet and reports
	// whether it did. It never replaces a profile: one the user set with
	// PUT /me/profile wins over a default, even when the two race.
	CreateIfAbsent(ctx context.Context, p profile.Profile) (created bool, err error)
}

// EmailDirectory finds a user's verified e-mail address when the token
// carries none: Cognito puts the email claim in ID tokens only, and a
// client may call the API with an access token. The stack's user pool
// implements it (package userpool).
type EmailDirectory interface {
	// Email returns the user's verified address, or "" when the directory
	// has none for the user or cannot be reached (the implementation logs
	// why): a seat never depends on mail.
	Email(ctx context.Context, userID string) string
}

// Deps are the Service's collaborators and settings.
type Deps struct {
	Store       Store
	Classes     ClassFinder
	Idempotency idempotency.Store
	// Policy is the address policy; Profiles is read at enrollment only under
	// profile.PolicyAtEnrollment.
	Policy   profile.AddressPolicy
	Profiles profile.Finder
	// SeedProfiles, if set, gives a student who has no profile yet one made
	// from the token's e-mail claim (profile.FromToken) on enrollment, so
	// that notifications have an address under the current policy. It is
	// also used for the at_enrollment policy's reads when Profiles is nil.
	SeedProfiles ProfileSeeder
	// Directory, if set, gives the address of a first profile when the
	// token has no e-mail claim (an access token).
	Directory EmailDirectory
	// Now and NewID default to the wall clock (UTC) and random UUIDs.
	Now   func() time.Time
	NewID func() string
}

// Service runs the enrollment use cases. It is safe for concurrent use.
type Service struct {
	store    Store
	classes  ClassFinder
	known    classCache
	profiled studentSet
	idem     idempotency.Store
	policy   profile.AddressPolicy
	profiles profile.Finder
	seeder   ProfileSeeder
	dir      EmailDirectory
	now      func() time.Time
	newID    func() string
}

// NewService checks d and returns a Service.
func NewService(d Deps) (*Service, error) {
	var errs []error
	if d.Store == nil {
		errs = append(errs, errors.New("enrollment service: Store is required"))
	}
	if d.Classes == nil {
		errs = append(errs, errors.New("enrollment service: Classes is required"))
	}
	if d.Idempotency == nil {
		errs = append(errs, errors.New("enrollment service: Idempotency is required"))
	}
	policy, err := profile.ParseAddressPolicy(string(d.Policy))
	if err != nil {
		errs = append(errs, fmt.Errorf("enrollment service: %w", err))
	}
	if d.Profiles == nil && d.SeedProfiles != nil {
		d.Profiles = d.SeedProfiles
	}
	if policy == profile.PolicyAtEnrollment && d.Profiles == nil {
		errs = append(errs, errors.New("enrollment service: Profiles is required by the at_enrollment address policy"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s := &Service{store: d.Store, classes: d.Classes, idem: d.Idempotency, policy: policy, profiles: d.Profiles, seeder: d.SeedProfiles, dir: d.Directory, now: d.Now, newID: d.NewID}
	if s.now == nil {
		s.now = func() time.Time { return time.Now().UTC() }
	}
	if s.newID == nil {
		s.newID = events.NewID
	}
	return s, nil
}

// EnrollRequest is a student's request for a seat.
type EnrollRequest struct {
	ClassID   string
	StudentID string // from the verified token, never from the body
	// TokenEmail is the e-mail claim of the token. When the student has no
	// profile yet it becomes the first profile (with Deps.SeedProfiles) and,
	// under the at_enrollment policy, the captured address.
	TokenEmail string
	// IdempotencyKey and RequestFingerprint (see idempotency.Fingerprint)
	// identify the request for replays.
	IdempotencyKey     string
	RequestFingerprint string
	// Respond renders the response for a new enrollment. It is stored with
	// the idempotency record in the same transaction, so a replay returns
	// exactly the same status and body.
	Respond func(Enrollment) (idempotency.Response, error)
}

// EnrollResult is the outcome of Enroll.
type EnrollResult struct {
	// Enrollment is the new enrollment; zero when Replayed.
	Enrollment Enrollment
	// Response is what to answer: the rendered response of the new
	// enrollment, or the stored response of the original request.
	Response idempotency.Response
	// Replayed is true when the response is the stored one (send the
	// Idempotent-Replayed header).
	Replayed bool
}

// Enroll gives the student a seat, or replays the answer to an earlier
// identical request. Errors: club.ErrIdempotencyKeyRequired,
// club.ErrIdempotencyKeyReused, club.ErrClassNotFound, club.ErrClassFull,
// club.ErrAlreadyEnrolled, club.ErrContention, or an infrastructure error.
func (s *Service) Enroll(ctx context.Context, req EnrollRequest) (EnrollResult, error) {
	if err := idempotency.ValidateKey(req.IdempotencyKey); err != nil {
		return EnrollResult{}, err
	}
	if req.ClassID == "" || req.StudentID == "" || req.RequestFingerprint == "" || req.Respond == nil {
		return EnrollResult{}, errors.New("enroll: ClassID, StudentID, RequestFingerprint and Respond are required")
	}

	// The idempotency record is not read first: the create transaction is
	// conditional on its absence, and a retry that finds it there is
	// answered from it (Store.Create's ExistsError), so a new enrollment
	// costs no read for a rare replay.
	c, err := s.class(ctx, req.ClassID)
	if errors.Is(err, club.ErrClassNotFound) {
		// The key may belong to an earlier request (another class): its
		// answer, or idempotency_key_reused, comes first.
		if rec, gerr := s.idem.Get(ctx, req.StudentID, req.IdempotencyKey); gerr == nil {
			return replay(rec, req.RequestFingerprint)
		}
	}
	if err != nil {
		return EnrollResult{}, fmt.Errorf("enroll in class %s: %w", req.ClassID, err)
	}
	// No seat check here: the transaction decides, so that concurrent
	// requests cannot overbook and the error precedence is the store's.

	now := s.now()
	e, err := New(s.newID(), c.ID(), req.StudentID, c.TeacherID(), now)
	if err != nil {
		return EnrollResult{}, fmt.Errorf("enroll: %w", err)
	}
	// Before the commit: once the event is in the outbox the notifier may
	// look for the student's address within milliseconds.
	addr, err := s.prepareProfile(ctx, req)
	if err != nil {
		return EnrollResult{}, err
	}
	if s.policy == profile.PolicyAtEnrollment {
		e.CaptureAddress(addr)
	}
	startsAt := c.StartsAt()
	env, err := events.New(s.newID(), now, events.EnrollmentCreated{
		EnrollmentID: e.ID(), ClassID: e.ClassID(), StudentID: e.StudentID(), ClassStartsAt: &startsAt,
	})
	if err != nil {
		return EnrollResult{}, fmt.Errorf("enroll: %w", err)
	}
	resp, err := req.Respond(e)
	if err != nil {
		return EnrollResult{}, fmt.Errorf("enroll: render response: %w", err)
	}
	err = s.store.Create(ctx, Creation{
		Enrollment: e,
		Event:      env,
		Idempotency: idempotency.Record{
			Caller: req.StudentID, Key: req.IdempotencyKey, Fingerprint: req.RequestFingerprint,
			Response: resp, ResourceID: e.ID(), CreatedAt: now,
		},
	})
	if exists, ok := errors.AsType[*idempotency.ExistsError](err); ok {
		return replay(exists.Record, req.RequestFingerprint)
	}
	if err != nil {
		return EnrollResult{}, fmt.Errorf("enroll student %s in class %s: %w", req.StudentID, req.ClassID, err)
	}
	return EnrollResult{Enrollment: e, Response: resp}, nil
}

// class returns a class for an enrollment, from the classes this Service
// read recently when it can. Enroll uses only what never changes after a
// class is created (its id, teacher and start); seats are the transaction's
// business, not read here. Classes that are not found are not remembered.
func (s *Service) class(ctx context.Context, id string) (class.Class, error) {
	now := s.now()
	if c, ok := s.known.get(id, now); ok {
		return c, nil
	}
	c, err := s.classes.Get(ctx, id)
	if err != nil {
		return class.Class{}, err
	}
	s.known.put(c, now)
	return c, nil
}

// classCache remembers classes for classCacheTTL, at most classCacheSize of
// them (a full cache starts over). Safe for concurrent use.
type classCache struct {
	mu      sync.Mutex
	entries map[string]cachedClass
}

type cachedClass struct {
	class class.Class
	until time.Time
}

const (
	classCacheTTL  = time.Minute
	classCacheSize = 4096
)

func (k *classCache) get(id string, now time.Time) (class.Class, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.entries[id]
	if !ok || now.After(e.until) {
		return class.Class{}, false
	}
	return e.class, true
}

func (k *classCache) put(c class.Class, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.entries == nil || len(k.entries) >= classCacheSize {
		k.entries = make(map[string]cachedClass)
	}
	k.entries[c.ID()] = cachedClass{class: c, until: now.Add(classCacheTTL)}
}

// studentSet remembers the students known to have a profile, at most
// studentSetSize of them (when full it starts again, as classCache does):
// a profile, once there, stays, so a member never goes stale.
type studentSet struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

const studentSetSize = 1 << 16

func (k *studentSet) has(id string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.ids[id]
	return ok
}

func (k *studentSet) add(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ids == nil || len(k.ids) >= studentSetSize {
		k.ids = make(map[string]struct{})
	}
	k.ids[id] = struct{}{}
}

func replay(rec idempotency.Record, fingerprint string) (EnrollResult, error) {
	resp, err := rec.Replay(fingerprint)
	if err != nil {
		return EnrollResult{}, fmt.Errorf("enroll: %w", err)
	}
	return EnrollResult{Response: resp, Replayed: true}, nil
}

// prepareProfile applies the profile rules of an enrollment and returns the
// address to capture under the at_enrollment policy: the profile's, else the
// token's. With a seeder, a student without a profile gets one made from the
// token's e-mail, or from the Directory's when the token has none (a failed
// enrollment may leave it behind: it is the student's own verified address). Without any address the enrollment still
// succeeds (a seat must not depend on mail); the notifier will find none and
// record the notification as failed.
//
// Under the current policy the address is not needed here, only the
// profile's existence; profiles are never deleted, so a student this
// process has seen with a profile is not read again (studentSet).
func (s *Service) prepareProfile(ctx context.Context, req EnrollRequest) (string, error) {
	if s.seeder == nil && s.policy != profile.PolicyAtEnrollment {
		return "", nil // nothing to read
	}
	current := s.policy != profile.PolicyAtEnrollment
	if current && s.profiled.has(req.StudentID) {
		return "", nil
	}
	p, err := s.profiles.Get(ctx, req.StudentID)
	switch {
	case err == nil:
		if current {
			s.profiled.add(req.StudentID)
		}
		return p.Email, nil
	case !errors.Is(err, club.ErrNotFound):
		return "", fmt.Errorf("enroll: read profile of %s: %w", req.StudentID, err)
	case s.seeder == nil:
		return req.TokenEmail, nil
	}
	email := req.TokenEmail
	if email == "" && s.dir != nil {
		email = s.dir.Email(ctx, req.StudentID)
	}
	first, err := profile.FromToken(req.StudentID, email, s.now())
	if err != nil {
		return email, nil // no usable address: nothing to seed
	}
	created, err := s.seeder.CreateIfAbsent(ctx, first)
	if err != nil {
		return "", fmt.Errorf("enroll: create the first profile of %s: %w", req.StudentID, err)
	}
	if current {
		// Created now or by a concurrent PUT /me/profile: either way it
		// exists, and under the current policy its address is not needed.
		s.profiled.add(req.StudentID)
		return "", nil
	}
	if created {
		return first.Email, nil
	}
	// A concurrent PUT /me/profile won: its address is the student's choice.
	if p, err = s.profiles.Get(ctx, req.StudentID); err != nil {
		return "", fmt.Errorf("enroll: read profile of %s: %w", req.StudentID, err)
	}
	return p.Email, nil
}

// Get returns an enrollment the caller may see (its student or the class's
// teacher); any other caller gets club.ErrNotFound, as for a missing one.
func (s *Service) Get(ctx context.Context, id, callerID string) (Enrollment, error) {
	e, err := s.store.Get(ctx, id)
	if err != nil {
		return Enrollment{}, fmt.Errorf("get enrollment %s: %w", id, err)
	}
	if !e.VisibleTo(callerID) {
		return Enrollment{}, fmt.Errorf("get enrollment %s: %w", id, club.ErrNotFound)
	}
	return e, nil
}

// Cancel cancels the caller's enrollment and returns it. Only its student may
// cancel (anyone else gets club.ErrNotFound). Cancelling a cancelled
// enrollment returns it as stored, without a second event or seat.
func (s *Service) Cancel(ctx context.Context, id, callerID string) (Enrollment, error) {
	e, err := s.store.Get(ctx, id)
	if err != nil {
		return Enrollment{}, fmt.Errorf("cancel enrollment %s: %w", id, err)
	}
	if e.StudentID() != callerID {
		return Enrollment{}, fmt.Errorf("cancel enrollment %s: %w", id, club.ErrNotFound)
	}
	now := s.now()
	if err := e.Cancel(now); errors.Is(err, ErrNotEnrolled) {
		return e, nil
	}
	env, err := events.New(s.newID(), now, events.EnrollmentCancelled{
		EnrollmentID: e.ID(), ClassID: e.ClassID(), StudentID: e.StudentID(),
	})
	if err != nil {
		return Enrollment{}, fmt.Errorf("cancel enrollment %s: %w", id, err)
	}
	err = s.store.Cancel(ctx, Cancellation{Enrollment: e, Event: env})
	if errors.Is(err, ErrNotEnrolled) {
		// A concurrent cancel won; answer with what it stored.
		stored, err := s.store.Get(ctx, id)
		if err != nil {
			return Enrollment{}, fmt.Errorf("cancel enrollment %s: read after a concurrent cancel: %w", id, err)
		}
		return stored, nil
	}
	if err != nil {
		return Enrollment{}, fmt.Errorf("cancel enrollment %s: %w", id, err)
	}
	return e, nil
}
