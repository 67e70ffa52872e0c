package projection

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/inbox"
)

// The consumers that maintain the read models. The names key their inbox
// rows, so they must never change.
const (
	ConsumerRoster    = "roster"
	ConsumerAnalytics = "analytics"
)

// Effect is one change to a read model. The set is closed; adapters translate
// each kind into their own writes.
type Effect interface{ isEffect() }

// AddToRoster lists an enrollment in its class's roster. Applying it to an
// entry that was already removed leaves the entry removed.
type AddToRoster struct {
	ClassID      string
	EnrollmentID string
	StudentID    string
	EnrolledAt   time.Time
}

// RemoveFromRoster removes an enrollment from its class's roster, whether or
// not it was added yet.
type RemoveFromRoster struct {
	ClassID      string
	EnrollmentID string
	CancelledAt  time.Time
}

// CountStats adds to a class's counters.
type CountStats struct {
	ClassID       string
	Enrollments   int64
	Cancellations int64
}

func (AddToRoster) isEffect()      {}
func (RemoveFromRoster) isEffect() {}
func (CountStats) isEffect()       {}

// Roster is the roster of a class.
type Roster struct {
	ClassID string
	// Students are ordered by enrollment time, then student id. Empty, not
	// nil, for a class without students.
	Students []Student
	// AsOf is when the roster last changed (zero if it never did): the
	// projection lags the enrollments by the pipeline's delay.
	AsOf time.Time
}

// Student is one roster entry.
type Student struct {
	StudentID  string
	EnrolledAt time.Time
}

// Stats are the counters of a class.
type Stats struct {
	ClassID            string
	EnrollmentsTotal   int64
	CancellationsTotal int64
}

// ClassSummary is one class of a teacher with its counters: a row of the
// teacher's nightly report. The seats are as committed; the counters are the
// stats projection's, which may lag behind.
type ClassSummary struct {
	ClassID    string
	Title      string
	Capacity   int
	SeatsTaken int
	StartsAt   time.Time
	Stats      Stats
}

// Inbox applies effects exactly once per consumer and event.
//
// The record that an event was applied is the inbox row of (consumer,
// event id), written with the effects, except for the applications that
// [RecordedOnEntry] names: the roster consumer's, whose one effect lands on
// a roster entry keyed by enrollment. That entry records the event itself
// ([EntryRecord]) and no inbox row is written: the effect is idempotent by
// its key, so the entry can tell a repeat on its own. What it cannot see is
// an event id reused for another enrollment or class (that lands on another
// entry); the entry's record never expires, unlike an inbox row.
type Inbox interface {
	// ApplyOnce commits effects and the record of (consumer, env.EventID)
	// in one write: the inbox row with the effects in one transaction, or,
	// for an application recorded on its entry, the entry's change and
	// record in one conditional write. It returns inbox.ErrDuplicate if the
	// record exists with the same fingerprint and inbox.ErrContractConflict
	// if it exists with another (or, on an entry, if the entry records
	// another event of the same kind, see [EntryRecord.Check]); in both cases
	// nothing changes. Any other error means nothing was committed and the
	// call may be retried. Safe for concurrent use, including concurrent
	// calls for the same event (one wins, the other gets ErrDuplicate).
	ApplyOnce(ctx context.Context, consumer string, env events.Envelope, effects []Effect) error
	// ApplyAllOnce commits the effects and records of several events with
	// distinct ids in as few transactions as the store allows (one for a
	// Lambda batch), each all or nothing; effects of different events on the
	// same item are merged into one write. nil means every event is applied.
	// An *AlreadyRecorded means every event is applied except the ones it
	// names, whose inbox rows existed already (a redelivery, a duplicate
	// publish): the store left them out and committed the others, so one
	// duplicate does not cost the batch its transaction, and its Settled
	// answers for those whose rows it read. Any other error means some
	// events may be applied and others not. Either way ApplyOnce for each
	// event neither known applied nor settled then settles it exactly once
	// (an applied one answers inbox.ErrDuplicate). Safe for concurrent use.
	ApplyAllOnce(ctx context.Context, consumer string, batch []Application) error
}

// AlreadyRecorded is ApplyAllOnce's error when it applied every event of
// the batch but the ones named, whose inbox rows existed already. Settled
// holds, for those the store could tell by reading their rows, what ApplyOnce
// would have answered: inbox.ErrDuplicate (the same event) or
// inbox.ErrContractConflict (another event under its id). The caller settles
// the others with ApplyOnce.
type AlreadyRecorded struct {
	EventIDs []string
	Settled  map[string]error
}

func (e *AlreadyRecorded) Error() string {
	return fmt.Sprintf("%d events of the batch already recorded, the others applied: %v", len(e.EventIDs), e.EventIDs)
}

// RecordedOnEntry returns the effect of an application that is recorded on
// the roster entry it changes instead of in an inbox row, and whether the
// application is one: the roster consumer's applications of exactly one
// [AddToRoster] or [RemoveFromRoster] (every application [RosterEffects]
// makes). The entry belongs to the roster consumer, so no other consumer's
// application is recorded on it, and an application with several effects,
// or with counters (which are not idempotent by key), keeps its inbox row.
// The rule depends only on the consumer and the effects, which an event's
// content fixes, so every delivery of one event is recorded the same way.
func RecordedOnEntry(consumer string, effects []Effect) (Effect, bool) {
	if consumer != ConsumerRoster || len(effects) != 1 {
		return nil, false
	}
	switch eff := effects[0].(type) {
	case AddToRoster, RemoveFromRoster:
		return eff, true
	default:
		return nil, false
	}
}

// EntryRecord is what a roster entry keeps of the applications recorded on
// it (see [RecordedOnEntry]): the id and fingerprint
// (events.Envelope.Fingerprint) of the event that added it and of the one
// that removed it; empty until that happened. Each is written once, in the
// write that applies its event, and never changes or expires.
type EntryRecord struct {
	CreatedEvent, CreatedFingerprint     string
	CancelledEvent, CancelledFingerprint string
}

// Admits reports whether an entry with this record takes the application
// of event eventID with effect eff (an AddToRoster or a RemoveFromRoster):
// the entry records no event of eff's kind yet, and eventID is not the
// event recorded for the other kind. Stores make this the condition of the
// entry's write.
func (r EntryRecord) Admits(eventID string, eff Effect) bool {
	own, _, other, _ := r.slots(eff)
	return own == "" && other != eventID
}

// Check classifies a delivery of env with effect eff that the entry did not
// admit: inbox.ErrDuplicate if the entry records env's id, for eff's kind,
// with env's fingerprint; inbox.ErrContractConflict if it records env's id
// with another fingerprint or for the other kind, or another event of
// eff's kind (an enrollment added or removed by two events). nil if the
// record admits the delivery after all: it changed since the refused write,
// and the caller may retry.
func (r EntryRecord) Check(env events.Envelope, eff Effect) error {
	own, ownFP, other, otherFP := r.slots(eff)
	stored := inbox.Record{Consumer: ConsumerRoster, EventID: env.EventID, EventType: env.Type}
	switch {
	case own == env.EventID:
		stored.Fingerprint = ownFP
		return stored.Check(env.Fingerprint())
	case other == env.EventID:
		stored.Fingerprint = otherFP
		return stored.Check(env.Fingerprint())
	case own != "":
		return fmt.Errorf("consumer %s, event %s (%s): the roster entry records event %s for it: %w",
			ConsumerRoster, env.EventID, env.Type, own, inbox.ErrContractConflict)
	default:
		return nil
	}
}

// slots returns the record's event and fingerprint of eff's kind, then of
// the other kind.
func (r EntryRecord) slots(eff Effect) (own, ownFP, other, otherFP string) {
	if _, ok := eff.(RemoveFromRoster); ok {
		return r.CancelledEvent, r.CancelledFingerprint, r.CreatedEvent, r.CreatedFingerprint
	}
	return r.CreatedEvent, r.CreatedFingerprint, r.CancelledEvent, r.CancelledFingerprint
}

// EntryOf returns the class and enrollment of the roster entry that an
// AddToRoster or RemoveFromRoster changes.
func EntryOf(eff Effect) (classID, enrollmentID string, ok bool) {
	switch eff := eff.(type) {
	case AddToRoster:
		return eff.ClassID, eff.EnrollmentID, true
	case RemoveFromRoster:
		return eff.ClassID, eff.EnrollmentID, true
	default:
		return "", "", false
	}
}

// Application is one event and the effects a consumer derives from it.
type Application struct {
	Event   events.Envelope
	Effects []Effect
}

// Reader reads the read models. Both reads are eventually consistent with the
// enrollments. A class with no events yet reads as empty, not as an error:
// whether the class exists and who may read it is the caller's check.
type Reader interface {
	Roster(ctx context.Context, classID string) (Roster, error)
	Stats(ctx context.Context, classID string) (Stats, error)
}

// RosterEffects maps an event to the roster's effects; events the roster does
// not use map to none.
func RosterEffects(env events.Envelope) ([]Effect, error) {
	switch env.Type {
	case events.TypeEnrollmentCreated:
		p, err := env.EnrollmentCreated()
		if err != nil {
			return nil, err
		}
		return []Effect{AddToRoster{ClassID: p.ClassID, EnrollmentID: p.EnrollmentID, StudentID: p.StudentID, EnrolledAt: env.OccurredAt}}, nil
	case events.TypeEnrollmentCancelled:
		p, err := env.EnrollmentCancelled()
		if err != nil {
			return nil, err
		}
		return []Effect{RemoveFromRoster{ClassID: p.ClassID, EnrollmentID: p.EnrollmentID, CancelledAt: env.OccurredAt}}, nil
	default:
		return nil, nil
	}
}

// StatsEffects maps an event to the counters' effects; events the counters do
// not use map to none.
func StatsEffects(env events.Envelope) ([]Effect, error) {
	switch env.Type {
	case events.TypeEnrollmentCreated:
		p, err := env.EnrollmentCreated()
		if err != nil {
			return nil, err
		}
		return []Effect{CountStats{ClassID: p.ClassID, Enrollments: 1}}, nil
	case events.TypeEnrollmentCancelled:
		p, err := env.EnrollmentCancelled()
		if err != nil {
			return nil, err
		}
		return []Effect{CountStats{ClassID: p.ClassID, Cancellations: 1}}, nil
	default:
		return nil, nil
	}
}

// Projector is one consumer of the read models: its name, how it maps events
// to effects, and the inbox it applies them through.
type Projector struct {
	consumer string
	effects  func(events.Envelope) ([]Effect, error)
	inbox    Inbox
}

// NewRosterProjector returns the roster consumer.
func NewRosterProjector(ib Inbox) *Projector {
	return &Projector{consumer: ConsumerRoster, effects: RosterEffects, inbox: ib}
}

// NewStatsProjector returns the analytics consumer.
func NewStatsProjector(ib Inbox) *Projector {
	return &Projector{consumer: ConsumerAnalytics, effects: StatsEffects, inbox: ib}
}

// Consumer is the projector's consumer name.
func (p *Projector) Consumer() string { return p.consumer }

// Apply applies one decoded event. nil and inbox.ErrDuplicate both mean
// "done, acknowledge"; events-package decoding errors and
// inbox.ErrContractConflict are permanent (dead-letter with the error text as
// the reason); anything else is transient (retry).
func (p *Projector) Apply(ctx context.Context, env events.Envelope) error {
	effects, err := p.effects(env)
	if err != nil {
		return fmt.Errorf("%s: event %s: %w", p.consumer, env.EventID, err)
	}
	if len(effects) == 0 {
		return nil // not an event this consumer uses; no inbox row needed
	}
	if err := p.inbox.ApplyOnce(ctx, p.consumer, env, effects); err != nil {
		return fmt.Errorf("%s: apply event %s: %w", p.consumer, env.EventID, err)
	}
	return nil
}

// ApplyAll applies a batch of decoded events and returns one result per
// event, each meaning what Apply's would. The events go to the inbox
// together, in one ApplyAllOnce. When some of them were recorded before
// (*AlreadyRecorded: the others are applied), the store's reading of their
// records answers for them, and only those it could not read are applied
// again on their own, to tell a duplicate from a contract conflict; if it fails
// otherwise (a transient error), each event is applied on its own, so that
// one event cannot hold back the others and each gets its own result. An
// event id that appears twice in envs is applied once with the others and
// then on its own (a duplicate, or a contract conflict).
//
// A batch whose applications are all recorded on their roster entries
// ([RecordedOnEntry]) is not committed together: each application is one
// conditional write of its own entry, which is its own record, so a
// transaction would add no guarantee and only cost (DynamoDB bills each
// item of a transaction twice). Those applications are applied on their
// own, concurrently, one ApplyOnce each.
func (p *Projector) ApplyAll(ctx context.Context, envs []events.Envelope) []error {
	errs := make([]error, len(envs))
	var batch []Application
	var batched, again []int // indexes into envs
	onEntries := true
	seen := make(map[string]bool, len(envs))
	for i, env := range envs {
		effects, err := p.effects(env)
		switch {
		case err != nil:
			errs[i] = fmt.Errorf("%s: event %s: %w", p.consumer, env.EventID, err)
		case len(effects) == 0:
			// not an event this consumer uses
		case seen[env.EventID]:
			again = append(again, i)
		default:
			seen[env.EventID] = true
			batch = append(batch, Application{Event: env, Effects: effects})
			batched = append(batched, i)
			_, recorded := RecordedOnEntry(p.consumer, effects)
			onEntries = onEntries && recorded
		}
	}
	if onEntries {
		p.applyEach(ctx, envs, batched, errs)
		batched = nil
	} else if len(batch) > 1 {
		batched = p.applyTogether(ctx, batch, batched, errs)
	}
	for _, i := range append(batched, again...) {
		errs[i] = p.Apply(ctx, envs[i])
	}
	return errs
}

// applyTogether commits batch (batched holds the index into the caller's
// events of each application) with ApplyAllOnce, sets errs for the events
// the store settled as recorded before, and returns the indexes of the
// events still to apply on their own: none, the recorded ones it could not
// settle, or all of them after any other error.
func (p *Projector) applyTogether(ctx context.Context, batch []Application, batched []int, errs []error) []int {
	err := p.inbox.ApplyAllOnce(ctx, p.consumer, batch)
	var recorded *AlreadyRecorded
	switch {
	case err == nil:
		return nil
	case errors.As(err, &recorded):
		ids := make(map[string]bool, len(recorded.EventIDs))
		for _, id := range recorded.EventIDs {
			ids[id] = true
		}
		var again []int
		for j, a := range batch {
			if !ids[a.Event.EventID] {
				continue
			}
			if settled, ok := recorded.Settled[a.Event.EventID]; ok {
				errs[batched[j]] = fmt.Errorf("%s: apply event %s: %w", p.consumer, a.Event.EventID, settled)
				continue
			}
			again = append(again, batched[j])
		}
		return again
	default:
		return batched
	}
}

// concurrentApplies bounds the writes applyEach has in flight at once (a
// Lambda batch of the roster's queue holds ten messages).
const concurrentApplies = 10

// applyEach applies envs[i] for each i in idx, each on its own, up to
// concurrentApplies at once, and sets errs[i] to its result. The events have
// distinct ids; two of them may change one entry (an enrollment and its
// cancellation), whose conditional writes the store serialises, and the
// effects commute.
func (p *Projector) applyEach(ctx context.Context, envs []events.Envelope, idx []int, errs []error) {
	switch len(idx) {
	case 0:
		return
	case 1:
		errs[idx[0]] = p.Apply(ctx, envs[idx[0]])
		return
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, concurrentApplies)
	for _, i := range idx {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			errs[i] = p.Apply(ctx, envs[i])
		})
	}
	wg.Wait()
}

// SortStudents orders roster entries as Roster documents: by enrollment time,
// then student id.
func SortStudents(s []Student) {
	slices.SortFunc(s, func(a, b Student) int {
		return cmp.Or(a.EnrolledAt.Compare(b.EnrolledAt), cmp.Compare(a.StudentID, b.StudentID))
	})
}
