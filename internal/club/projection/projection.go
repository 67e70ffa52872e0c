package projection

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/clubdev/club/events"
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

// Inbox applies effects exactly once per consumer and event.
type Inbox interface {
	// ApplyOnce commits effects and the inbox row of (consumer, env.EventID)
	// in one transaction. It returns inbox.ErrDuplicate if the row exists with
	// the same fingerprint and inbox.ErrContractConflict if it exists with
	// another; in both cases nothing changes. Any other error means nothing
	// was committed and the call may be retried. Safe for concurrent use,
	// including concurrent calls for the same event (one wins, the other gets
	// ErrDuplicate).
	ApplyOnce(ctx context.Context, consumer string, env events.Envelope, effects []Effect) error
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

// SortStudents orders roster entries as Roster documents: by enrollment time,
// then student id.
func SortStudents(s []Student) {
	slices.SortFunc(s, func(a, b Student) int {
		return cmp.Or(a.EnrolledAt.Compare(b.EnrolledAt), cmp.Compare(a.StudentID, b.StudentID))
	})
}
