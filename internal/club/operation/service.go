package operation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
)

// Creation is everything the create transaction writes.
type Creation struct {
	Operation Operation       // pending
	Event     events.Envelope // its job (export.requested), for the outbox
}

// Limits of a page of operations (ListQuery.Limit).
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// ListQuery selects one page of a user's operations, newest first.
type ListQuery struct {
	// CreatedBy is whose operations: the caller, from the verified token.
	CreatedBy string
	// Kind keeps operations of this kind only; "" keeps every kind.
	Kind Kind
	// Limit bounds the page (1..MaxListLimit; 0 means DefaultListLimit).
	Limit int
	// After continues a list: the Next of the page before, "" for the first
	// page.
	After string
}

// Page is one page of a list of operations, newest first.
type Page struct {
	Operations []Operation
	// Next is the cursor of the following page, "" when the list is
	// complete. A page may hold fewer than Limit operations, or none, and
	// still have a Next: follow it until it is "".
	Next string
}

// Store is the operation's persistence port.
type Store interface {
	// Create commits the operation and the outbox row of c.Event in one
	// transaction; on failure nothing is written. An id already used is
	// ErrExists (wrapped).
	Create(ctx context.Context, c Creation) error
	// Get returns an operation (strongly consistent) or ErrNotFound.
	Get(ctx context.Context, id string) (Operation, error)
	// List returns a page of q.CreatedBy's operations (q.Limit is valid),
	// newest first, and never anyone else's, whatever the cursor. The list
	// is eventually consistent: an operation created a moment ago may be
	// missing, and a status may lag. A cursor the store did not issue is a
	// *club.ValidationError on the field "cursor".
	List(ctx context.Context, q ListQuery) (Page, error)
	// Update reads the operation and calls change on it. If change returns
	// an error, nothing is written and the error is returned (wrapped); if
	// it left the operation as it was, nothing is written either.
	// Otherwise the result is written conditionally on the operation being
	// unchanged since the read; a lost race re-reads and calls change
	// again, a bounded number of times (then club.ErrContention), so change
	// may run more than once and must depend only on its argument. It
	// returns the operation as stored afterwards; ErrNotFound for an
	// unknown id.
	Update(ctx context.Context, id string, change func(*Operation) error) (Operation, error)
}

// Deps are the Service's collaborators.
type Deps struct {
	Store Store
	// Now and NewID default to the wall clock (UTC) and random UUIDs.
	Now   func() time.Time
	NewID func() string
}

// Service runs the API's operation use cases. It is stateless and safe for
// concurrent use.
type Service struct {
	store Store
	now   func() time.Time
	newID func() string
}

// NewService checks d and returns a Service.
func NewService(d Deps) (*Service, error) {
	if d.Store == nil {
		return nil, errors.New("operation service: Store is required")
	}
	s := &Service{store: d.Store, now: d.Now, newID: d.NewID}
	if s.now == nil {
		s.now = func() time.Time { return time.Now().UTC() }
	}
	if s.newID == nil {
		s.newID = events.NewID
	}
	return s, nil
}

// ExportRequest asks for a class's roster as a file.
type ExportRequest struct {
	ClassID string
	// RequestedBy is the caller, from the verified token; whether the
	// caller may export the class (its teacher) is checked before.
	RequestedBy string
}

// RequestRosterExport records a pending operation and its job in one
// transaction and returns the operation; the file is built when the relay
// has delivered the job to the exports queue. Errors: *club.ValidationError,
// club.ErrContention, or an infrastructure error.
func (s *Service) RequestRosterExport(ctx context.Context, req ExportRequest) (Operation, error) {
	now := s.now()
	op, err := NewRosterExport("op-"+s.newID(), req.ClassID, req.RequestedBy, now)
	if err != nil {
		return Operation{}, fmt.Errorf("export roster: %w", err)
	}
	env, err := events.New(s.newID(), now, events.ExportRequested{
		OperationID: op.ID(), Kind: string(op.Kind()), ClassID: op.ClassID(), RequestedBy: op.CreatedBy(),
	})
	if err != nil {
		return Operation{}, fmt.Errorf("export roster: %w", err)
	}
	if err := s.store.Create(ctx, Creation{Operation: op, Event: env}); err != nil {
		return Operation{}, fmt.Errorf("export roster of class %s: %w", req.ClassID, err)
	}
	return op, nil
}

// RequestTeacherReport asks for teacherID's report of the UTC day of date,
// as the nightly schedule does: a pending operation (TeacherReportID, the
// teacher its creator) and its job, in one transaction. The same teacher
// and day again create nothing (created is false): a schedule fired twice,
// or retried, produces one report. Errors: *club.ValidationError,
// club.ErrContention, or an infrastructure error.
func (s *Service) RequestTeacherReport(ctx context.Context, teacherID string, date time.Time) (id string, created bool, err error) {
	now := s.now()
	op, err := NewTeacherReport(TeacherReportID(teacherID, date), teacherID, now)
	if err != nil {
		return "", false, fmt.Errorf("teacher report: %w", err)
	}
	env, err := events.New(s.newID(), now, events.ExportRequested{
		OperationID: op.ID(), Kind: string(op.Kind()), RequestedBy: op.CreatedBy(),
	})
	if err != nil {
		return "", false, fmt.Errorf("teacher report: %w", err)
	}
	err = s.store.Create(ctx, Creation{Operation: op, Event: env})
	switch {
	case errors.Is(err, ErrExists):
		return op.ID(), false, nil
	case err != nil:
		return "", false, fmt.Errorf("teacher report of %s: %w", teacherID, err)
	}
	return op.ID(), true, nil
}

// List returns a page of the caller's own operations, newest first. It
// checks q (the caller is q.CreatedBy): an unknown kind or a limit outside
// 1..MaxListLimit is a *club.ValidationError, as is a cursor that is not
// one the store issued.
func (s *Service) List(ctx context.Context, q ListQuery) (Page, error) {
	switch {
	case q.CreatedBy == "":
		return Page{}, club.Invalid("created_by", "is required")
	case q.Kind != "" && !slices.Contains(Kinds, q.Kind):
		return Page{}, club.Invalid("kind", "must be one of %s", kindList())
	case q.Limit == 0:
		q.Limit = DefaultListLimit
	case q.Limit < 1 || q.Limit > MaxListLimit:
		return Page{}, club.Invalid("limit", "must be between 1 and %d", MaxListLimit)
	}
	page, err := s.store.List(ctx, q)
	if err != nil {
		return Page{}, fmt.Errorf("list operations: %w", err)
	}
	return page, nil
}

func kindList() string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// Get returns an operation its creator may see; anyone else gets
// ErrNotFound, as for a missing one.
func (s *Service) Get(ctx context.Context, id, callerID string) (Operation, error) {
	op, err := s.store.Get(ctx, id)
	if err != nil {
		return Operation{}, fmt.Errorf("get operation %s: %w", id, err)
	}
	if !op.VisibleTo(callerID) {
		return Operation{}, fmt.Errorf("get operation %s: %w", id, ErrNotFound)
	}
	return op, nil
}
