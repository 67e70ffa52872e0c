package memstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/inbox"
	"github.com/clubdev/club/internal/club/lease"
	"github.com/clubdev/club/internal/club/outbox"
	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/club/projection"
)

// Store bundles one implementation per port over one shared state, so that
// for example an enrollment's outbox row is visible through Outbox.
type Store struct {
	Classes     *Classes
	Enrollments *Enrollments
	Idempotency *Idempotency
	Profiles    *Profiles
	Inbox       *Inbox
	Projections *Projections
	Outbox      *Outbox
	Leases      *Leases
}

// New returns an empty store whose clock is time.Now.
func New() *Store { return NewWithClock(time.Now) }

// NewWithClock returns an empty store that reads time (for inbox rows'
// processing time and the roster's as-of) from now.
func NewWithClock(now func() time.Time) *Store {
	d := &db{
		now:         now,
		classes:     map[string]class.Class{},
		members:     map[member]string{},
		enrollments: map[string]enrollment.Enrollment{},
		idem:        map[idemKey]idempotency.Record{},
		outbox:      map[string]outbox.Row{},
		profiles:    map[string]profile.Profile{},
		inbox:       map[inboxKey]inbox.Record{},
		roster:      map[string]map[string]rosterEntry{},
		rosterAsOf:  map[string]time.Time{},
		stats:       map[string]projection.Stats{},
		leases:      map[string]lease.Lease{},
	}
	return &Store{
		Classes: &Classes{d}, Enrollments: &Enrollments{d}, Idempotency: &Idempotency{d},
		Profiles: &Profiles{d}, Inbox: &Inbox{d}, Projections: &Projections{d},
		Outbox: &Outbox{d}, Leases: &Leases{d},
	}
}

type member struct{ classID, studentID string }
type idemKey struct{ caller, key string }
type inboxKey struct{ consumer, eventID string }

type rosterEntry struct {
	studentID   string
	enrolledAt  time.Time // zero until added
	cancelledAt time.Time // zero unless removed
	record      projection.EntryRecord
}

type db struct {
	mu          sync.Mutex
	now         func() time.Time
	classes     map[string]class.Class
	members     map[member]string // the student's claim on a class → enrollment id
	enrollments map[string]enrollment.Enrollment
	idem        map[idemKey]idempotency.Record
	outbox      map[string]outbox.Row
	profiles    map[string]profile.Profile
	inbox       map[inboxKey]inbox.Record
	roster      map[string]map[string]rosterEntry // class → enrollment → entry
	rosterAsOf  map[string]time.Time
	stats       map[string]projection.Stats
	leases      map[string]lease.Lease
}

// Classes implements class.Repository.
type Classes struct{ d *db }

var _ class.Repository = (*Classes)(nil)

func (c *Classes) Create(_ context.Context, cl class.Class) error {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if _, ok := c.d.classes[cl.ID()]; ok {
		return fmt.Errorf("create class %s: already exists", cl.ID())
	}
	c.d.classes[cl.ID()] = cl
	return nil
}

func (c *Classes) Get(_ context.Context, id string) (class.Class, error) {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	cl, ok := c.d.classes[id]
	if !ok {
		return class.Class{}, fmt.Errorf("class %s: %w", id, club.ErrClassNotFound)
	}
	return cl, nil
}

// Enrollments implements enrollment.Store and enrollment.NotificationStore.
type Enrollments struct{ d *db }

var (
	_ enrollment.Store             = (*Enrollments)(nil)
	_ enrollment.NotificationStore = (*Enrollments)(nil)
)

func (s *Enrollments) Create(_ context.Context, c enrollment.Creation) error {
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	e := c.Enrollment
	// Check every condition first, then write everything: all or nothing.
	if rec, ok := d.idem[idemKey{c.Idempotency.Caller, c.Idempotency.Key}]; ok {
		return &idempotency.ExistsError{Record: rec}
	}
	if _, ok := d.members[member{e.ClassID(), e.StudentID()}]; ok {
		return club.ErrAlreadyEnrolled
	}
	cl, ok := d.classes[e.ClassID()]
	if !ok {
		return club.ErrClassNotFound
	}
	if err := cl.TakeSeat(); err != nil {
		return err
	}
	if _, ok := d.enrollments[e.ID()]; ok {
		return fmt.Errorf("create enrollment %s: id already used", e.ID())
	}
	row, err := outbox.NewRow(c.Event, e.CreatedAt())
	if err != nil {
		return err
	}
	if _, ok := d.outbox[row.EventID]; ok {
		return fmt.Errorf("create enrollment %s: event id %s already used", e.ID(), row.EventID)
	}
	d.classes[cl.ID()] = cl
	d.members[member{e.ClassID(), e.StudentID()}] = e.ID()
	d.enrollments[e.ID()] = e
	d.outbox[row.EventID] = row
	d.idem[idemKey{c.Idempotency.Caller, c.Idempotency.Key}] = cloneRecord(c.Idempotency)
	return nil
}

func (s *Enrollments) Cancel(_ context.Context, c enrollment.Cancellation) error {
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	e := c.Enrollment
	stored, ok := d.enrollments[e.ID()]
	if !ok {
		return fmt.Errorf("cancel enrollment %s: %w", e.ID(), club.ErrNotFound)
	}
	if stored.Status() != enrollment.StatusEnrolled {
		return enrollment.ErrNotEnrolled
	}
	cl, ok := d.classes[e.ClassID()]
	if !ok || cl.SeatsTaken() == 0 {
		return fmt.Errorf("cancel enrollment %s: class %s has no seat taken", e.ID(), e.ClassID())
	}
	if d.members[member{e.ClassID(), e.StudentID()}] != e.ID() {
		return fmt.Errorf("cancel enrollment %s: the student's claim on class %s belongs to another enrollment", e.ID(), e.ClassID())
	}
	row, err := outbox.NewRow(c.Event, e.CancelledAt())
	if err != nil {
		return err
	}
	if _, ok := d.outbox[row.EventID]; ok {
		return fmt.Errorf("cancel enrollment %s: event id %s already used", e.ID(), row.EventID)
	}
	// Only the status changes: the notification fields are the notifier's
	// and may have moved since the caller read the enrollment.
	if err := stored.Cancel(e.CancelledAt()); err != nil {
		return err
	}
	cl.ReleaseSeat()
	d.classes[cl.ID()] = cl
	delete(d.members, member{e.ClassID(), e.StudentID()})
	d.enrollments[e.ID()] = stored
	d.outbox[row.EventID] = row
	return nil
}

func (s *Enrollments) Get(_ context.Context, id string) (enrollment.Enrollment, error) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	e, ok := s.d.enrollments[id]
	if !ok {
		return enrollment.Enrollment{}, fmt.Errorf("enrollment %s: %w", id, club.ErrNotFound)
	}
	return e, nil
}

// ChangeNotification applies c under the store's lock.
func (s *Enrollments) ChangeNotification(ctx context.Context, id string, c enrollment.NotificationChange) (enrollment.Enrollment, error) {
	return s.UpdateNotification(ctx, id, func(n *enrollment.Notification) error { return n.Apply(c) })
}

// UpdateNotification applies update to the notification under the store's
// lock: tests use it to put a notification in any state.
func (s *Enrollments) UpdateNotification(_ context.Context, id string, update func(*enrollment.Notification) error) (enrollment.Enrollment, error) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	e, ok := s.d.enrollments[id]
	if !ok {
		return enrollment.Enrollment{}, fmt.Errorf("enrollment %s: %w", id, club.ErrNotFound)
	}
	n := e.Notification()
	if err := update(&n); err != nil {
		return enrollment.Enrollment{}, fmt.Errorf("update notification of enrollment %s: %w", id, err)
	}
	e = e.WithNotification(n)
	s.d.enrollments[id] = e
	return e, nil
}

// Idempotency implements idempotency.Store.
type Idempotency struct{ d *db }

var _ idempotency.Store = (*Idempotency)(nil)

func (s *Idempotency) Get(_ context.Context, caller, key string) (idempotency.Record, error) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	rec, ok := s.d.idem[idemKey{caller, key}]
	if !ok {
		return idempotency.Record{}, fmt.Errorf("idempotency record %q: %w", key, club.ErrNotFound)
	}
	return cloneRecord(rec), nil
}

func cloneRecord(r idempotency.Record) idempotency.Record {
	r.Response.Body = slices.Clone(r.Response.Body)
	return r
}

// Profiles implements profile.Store and enrollment.ProfileSeeder.
type Profiles struct{ d *db }

var (
	_ profile.Store            = (*Profiles)(nil)
	_ enrollment.ProfileSeeder = (*Profiles)(nil)
)

func (s *Profiles) Put(_ context.Context, p profile.Profile) error {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	s.d.profiles[p.UserID] = p
	return nil
}

func (s *Profiles) CreateIfAbsent(_ context.Context, p profile.Profile) (bool, error) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if _, ok := s.d.profiles[p.UserID]; ok {
		return false, nil
	}
	s.d.profiles[p.UserID] = p
	return true, nil
}

func (s *Profiles) Get(_ context.Context, userID string) (profile.Profile, error) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	p, ok := s.d.profiles[userID]
	if !ok {
		return profile.Profile{}, fmt.Errorf("profile of %s: %w", userID, club.ErrNotFound)
	}
	return p, nil
}

// GetMany returns the profiles of the users that have one.
func (s *Profiles) GetMany(_ context.Context, userIDs []string) (map[string]profile.Profile, error) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	out := make(map[string]profile.Profile, len(userIDs))
	for _, id := range userIDs {
		if p, ok := s.d.profiles[id]; ok {
			out[id] = p
		}
	}
	return out, nil
}

// Inbox implements projection.Inbox.
type Inbox struct{ d *db }

var _ projection.Inbox = (*Inbox)(nil)

func (s *Inbox) ApplyOnce(_ context.Context, consumer string, env events.Envelope, effects []projection.Effect) error {
	if err := inbox.ValidateConsumer(consumer); err != nil {
		return err
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if eff, ok := projection.RecordedOnEntry(consumer, effects); ok {
		if rec := d.entry(eff).record; !rec.Admits(env.EventID, eff) {
			if err := rec.Check(env, eff); err != nil {
				return err
			}
		}
	} else if rec, ok := d.inbox[inboxKey{consumer, env.EventID}]; ok {
		return rec.Check(env.Fingerprint())
	}
	return d.applyLocked(consumer, env, effects)
}

// ApplyAllOnce applies the whole batch, or nothing when two of its events
// would be recorded as adding (or removing) one roster entry or an entry
// refuses its event (as the DynamoDB store's cancelled transaction). Events
// whose inbox rows exist are left out and the others applied, and a
// *projection.AlreadyRecorded names them and settles each from its row (as
// the DynamoDB store's second transaction and read).
func (s *Inbox) ApplyAllOnce(_ context.Context, consumer string, batch []projection.Application) error {
	if err := inbox.ValidateConsumer(consumer); err != nil {
		return err
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := make(map[string]bool, len(batch))
	recorded := map[entrySlot]string{} // the batch's records on entries → event id
	var already []string
	settled := map[string]error{}
	rest := make([]projection.Application, 0, len(batch))
	for _, a := range batch {
		if ids[a.Event.EventID] {
			return fmt.Errorf("memstore: event %s twice in one batch", a.Event.EventID)
		}
		ids[a.Event.EventID] = true
		if eff, ok := projection.RecordedOnEntry(consumer, a.Effects); ok {
			classID, enrollmentID, _ := projection.EntryOf(eff)
			_, removes := eff.(projection.RemoveFromRoster)
			slot := entrySlot{classID, enrollmentID, removes}
			if other, ok := recorded[slot]; ok {
				return fmt.Errorf("memstore: events %s and %s both recorded on roster entry %s/%s", other, a.Event.EventID, classID, enrollmentID)
			}
			recorded[slot] = a.Event.EventID
			if !d.entry(eff).record.Admits(a.Event.EventID, eff) {
				return fmt.Errorf("memstore: event %s: the roster entry refuses it", a.Event.EventID)
			}
		} else if rec, ok := d.inbox[inboxKey{consumer, a.Event.EventID}]; ok {
			already = append(already, a.Event.EventID)
			settled[a.Event.EventID] = rec.Check(a.Event.Fingerprint())
			continue
		}
		rest = append(rest, a)
	}
	for _, a := range rest {
		if err := d.applyLocked(consumer, a.Event, a.Effects); err != nil {
			return err
		}
	}
	if len(already) > 0 {
		return &projection.AlreadyRecorded{EventIDs: already, Settled: settled}
	}
	return nil
}

// applyLocked applies effects and records the inbox row; d.mu is held.
func (d *db) applyLocked(consumer string, env events.Envelope, effects []projection.Effect) error {
	now := d.now().UTC()
	for _, eff := range effects {
		switch eff := eff.(type) {
		case projection.AddToRoster:
			entries := d.rosterOf(eff.ClassID)
			entry := entries[eff.EnrollmentID]
			entry.studentID, entry.enrolledAt = eff.StudentID, eff.EnrolledAt.UTC()
			entries[eff.EnrollmentID] = entry
			d.rosterAsOf[eff.ClassID] = now
		case projection.RemoveFromRoster:
			entries := d.rosterOf(eff.ClassID)
			entry := entries[eff.EnrollmentID]
			entry.cancelledAt = eff.CancelledAt.UTC()
			entries[eff.EnrollmentID] = entry
			d.rosterAsOf[eff.ClassID] = now
		case projection.CountStats:
			st := d.stats[eff.ClassID]
			st.ClassID = eff.ClassID
			st.EnrollmentsTotal += eff.Enrollments
			st.CancellationsTotal += eff.Cancellations
			d.stats[eff.ClassID] = st
		default:
			// Unreachable while the Effect set is closed; fail loudly if a new
			// effect is added without teaching the fake.
			return fmt.Errorf("memstore: unsupported effect %T", eff)
		}
	}
	eff, onEntry := projection.RecordedOnEntry(consumer, effects)
	if !onEntry {
		d.inbox[inboxKey{consumer, env.EventID}] = inbox.NewRecord(consumer, env, now)
		return nil
	}
	classID, enrollmentID, _ := projection.EntryOf(eff)
	entries := d.rosterOf(classID)
	entry := entries[enrollmentID]
	if _, removes := eff.(projection.RemoveFromRoster); removes {
		entry.record.CancelledEvent, entry.record.CancelledFingerprint = env.EventID, env.Fingerprint()
	} else {
		entry.record.CreatedEvent, entry.record.CreatedFingerprint = env.EventID, env.Fingerprint()
	}
	entries[enrollmentID] = entry
	return nil
}

// entrySlot is one of a roster entry's two records: the event that added
// it, or the one that removed it.
type entrySlot struct {
	classID, enrollmentID string
	removes               bool
}

// entry returns the roster entry that eff (an AddToRoster or a
// RemoveFromRoster) changes, zero if it does not exist; d.mu is held.
func (d *db) entry(eff projection.Effect) rosterEntry {
	classID, enrollmentID, _ := projection.EntryOf(eff)
	return d.roster[classID][enrollmentID]
}

func (d *db) rosterOf(classID string) map[string]rosterEntry {
	m, ok := d.roster[classID]
	if !ok {
		m = map[string]rosterEntry{}
		d.roster[classID] = m
	}
	return m
}

// Projections implements projection.Reader.
type Projections struct{ d *db }

var _ projection.Reader = (*Projections)(nil)

func (s *Projections) Roster(_ context.Context, classID string) (projection.Roster, error) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	r := projection.Roster{ClassID: classID, Students: []projection.Student{}, AsOf: s.d.rosterAsOf[classID]}
	for _, entry := range s.d.roster[classID] {
		if !entry.enrolledAt.IsZero() && entry.cancelledAt.IsZero() {
			r.Students = append(r.Students, projection.Student{StudentID: entry.studentID, EnrolledAt: entry.enrolledAt})
		}
	}
	projection.SortStudents(r.Students)
	return r, nil
}

func (s *Projections) Stats(_ context.Context, classID string) (projection.Stats, error) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	st := s.d.stats[classID]
	st.ClassID = classID
	return st, nil
}

// Outbox implements outbox.Store.
type Outbox struct{ d *db }

var _ outbox.Store = (*Outbox)(nil)

func (s *Outbox) MarkPublished(_ context.Context, eventID string, at time.Time) error {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	row, ok := s.d.outbox[eventID]
	if !ok {
		return fmt.Errorf("outbox row %s: %w", eventID, club.ErrNotFound)
	}
	if row.Status == outbox.StatusPublished {
		return nil
	}
	row.Status, row.PublishedAt = outbox.StatusPublished, at.UTC()
	s.d.outbox[eventID] = row
	return nil
}

func (s *Outbox) Unpublished(_ context.Context, createdBefore time.Time, limit int) ([]outbox.Row, error) {
	if limit <= 0 {
		return nil, errors.New("outbox: limit must be positive")
	}
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	var rows []outbox.Row
	for _, row := range s.d.outbox {
		if row.Status == outbox.StatusPending && row.CreatedAt.Before(createdBefore) {
			rows = append(rows, cloneRow(row))
		}
	}
	outbox.SortOldestFirst(rows)
	if len(rows) > limit {
		rows = rows[:limit]
	}
	return rows, nil
}

func (s *Outbox) Get(_ context.Context, eventID string) (outbox.Row, error) {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	row, ok := s.d.outbox[eventID]
	if !ok {
		return outbox.Row{}, fmt.Errorf("outbox row %s: %w", eventID, club.ErrNotFound)
	}
	return cloneRow(row), nil
}

func cloneRow(r outbox.Row) outbox.Row {
	r.Payload = slices.Clone(r.Payload)
	return r
}

// Leases implements lease.Store.
type Leases struct{ d *db }

var _ lease.Store = (*Leases)(nil)

func (s *Leases) Acquire(_ context.Context, name, owner string, now time.Time, ttl time.Duration) (lease.Lease, error) {
	if name == "" || owner == "" || ttl <= 0 {
		return lease.Lease{}, errors.New("lease: name, owner and a positive ttl are required")
	}
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if cur, ok := s.d.leases[name]; ok && cur.Owner != owner && cur.ExpiresAt.After(now) {
		return lease.Lease{}, fmt.Errorf("lease %s (owner %s until %s): %w", name, cur.Owner, cur.ExpiresAt.Format(time.RFC3339), lease.ErrHeld)
	}
	l := lease.Lease{Name: name, Owner: owner, ExpiresAt: now.Add(ttl).UTC()}
	s.d.leases[name] = l
	return l, nil
}

func (s *Leases) Release(_ context.Context, name, owner string) error {
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	if cur, ok := s.d.leases[name]; ok && cur.Owner == owner {
		delete(s.d.leases, name)
	}
	return nil
}
