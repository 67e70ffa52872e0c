package operation

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
)

// Kind says what an operation produces.
type Kind string

const (
	// KindRosterExport is a CSV file of a class's roster.
	KindRosterExport Kind = events.ExportKindRosterExport
	// KindTeacherReport is the nightly CSV file of a teacher's classes (one
	// row per class with its seats and counters), asked for by the
	// schedule on the teacher's behalf.
	KindTeacherReport Kind = events.ExportKindTeacherReport
)

// Kinds lists every kind, for validating input.
var Kinds = []Kind{KindRosterExport, KindTeacherReport}

// Status is the business status of an operation.
type Status string

const (
	// StatusPending: accepted; its job waits in the queue.
	StatusPending Status = "pending"
	// StatusRunning: a worker has taken the job.
	StatusRunning Status = "running"
	// StatusSucceeded: the result is ready (Result).
	StatusSucceeded Status = "succeeded"
	// StatusFailed: the operation will not produce a result (Failure says
	// why).
	StatusFailed Status = "failed"
)

// Final reports whether the status never changes again.
func (s Status) Final() bool { return s == StatusSucceeded || s == StatusFailed }

// Failure codes: why an operation failed, stable snake_case that clients
// and runbooks match on.
const (
	// FailureClassNotFound: the class to export no longer exists.
	FailureClassNotFound = "class_not_found"
	// FailureMalformedJob: the job message could not be read; it is in the
	// exports dead-letter queue for a person.
	FailureMalformedJob = "malformed_job"
	// FailureRetriesExhausted: every allowed attempt failed transiently; the
	// job is in the exports dead-letter queue with the last error.
	FailureRetriesExhausted = "retries_exhausted"
)

var (
	// ErrNotFound: no such operation, or not the caller's (404
	// operation_not_found). It matches club.ErrNotFound too.
	ErrNotFound = fmt.Errorf("operation %w", club.ErrNotFound)
	// ErrFinished: the operation succeeded or failed; it never changes
	// again. A worker that gets it has nothing left to do.
	ErrFinished = errors.New("the operation has finished")
	// ErrNotRunning: a result was offered for an operation that no worker
	// has started: a bug in the caller.
	ErrNotRunning = errors.New("the operation is not running")
	// ErrExists: an operation with this id was created before (Store.Create
	// wrote nothing). For an operation with a deterministic id, such as a
	// teacher report, it means the work was already asked for.
	ErrExists = errors.New("operation id already used")
)

// Result is what a succeeded operation produced.
type Result struct {
	// URL fetches the file without other credentials until ExpiresAt.
	URL string
	// Rows is the number of data rows in the file (the header excluded).
	Rows int
	// ExpiresAt is when URL stops working.
	ExpiresAt time.Time
	// ObjectKey is where the file is stored, for operators; not shown to
	// clients.
	ObjectKey string
}

// Failure says why an operation failed.
type Failure struct {
	Code    string // one of the Failure* codes
	Message string // for people
}

// HistoryEntry is one status the operation entered, and when.
type HistoryEntry struct {
	Status Status
	At     time.Time
}

// Operation is one long operation. Its methods enforce the status rules
// described in the package documentation.
type Operation struct {
	id        string
	kind      Kind
	classID   string
	createdBy string
	status    Status
	createdAt time.Time
	updatedAt time.Time
	result    Result
	failure   Failure
	history   []HistoryEntry
}

// NewRosterExport returns a pending export of a class's roster, asked for by
// user createdBy at now.
func NewRosterExport(id, classID, createdBy string, now time.Time) (Operation, error) {
	switch {
	case id == "":
		return Operation{}, club.Invalid("operation_id", "is required")
	case classID == "":
		return Operation{}, club.Invalid("class_id", "is required")
	case createdBy == "":
		return Operation{}, club.Invalid("created_by", "is required")
	case now.IsZero():
		return Operation{}, club.Invalid("created_at", "is required")
	}
	now = now.UTC()
	return Operation{
		id: id, kind: KindRosterExport, classID: classID, createdBy: createdBy,
		status: StatusPending, createdAt: now, updatedAt: now,
		history: []HistoryEntry{{Status: StatusPending, At: now}},
	}, nil
}

// NewTeacherReport returns a pending report of teacherID's classes, asked
// for by the schedule at now on the teacher's behalf: the teacher is its
// creator, so only the teacher sees it. id is TeacherReportID's.
func NewTeacherReport(id, teacherID string, now time.Time) (Operation, error) {
	switch {
	case id == "":
		return Operation{}, club.Invalid("operation_id", "is required")
	case teacherID == "":
		return Operation{}, club.Invalid("created_by", "is required")
	case now.IsZero():
		return Operation{}, club.Invalid("created_at", "is required")
	}
	now = now.UTC()
	return Operation{
		id: id, kind: KindTeacherReport, createdBy: teacherID,
		status: StatusPending, createdAt: now, updatedAt: now,
		history: []HistoryEntry{{Status: StatusPending, At: now}},
	}, nil
}

// reportNamespace scopes the name-based UUIDs of teacher reports.
var reportNamespace = uuid.MustParse("4d0c6f1e-7a52-4b8e-9f3d-2c61a8e0b7d5")

// TeacherReportID is the id of teacherID's report for the UTC calendar day
// of date: the same teacher and day always give the same id, so a schedule
// that fires again, or is retried, asks for nothing new.
func TeacherReportID(teacherID string, date time.Time) string {
	day := date.UTC().Format(time.DateOnly)
	return "op-" + uuid.NewSHA1(reportNamespace, []byte(string(KindTeacherReport)+"\x00"+teacherID+"\x00"+day)).String()
}

func (o Operation) ID() string           { return o.id }
func (o Operation) Kind() Kind           { return o.kind }
func (o Operation) ClassID() string      { return o.classID } // empty for a teacher report
func (o Operation) CreatedBy() string    { return o.createdBy }
func (o Operation) Status() Status       { return o.status }
func (o Operation) CreatedAt() time.Time { return o.createdAt }

// UpdatedAt is when the status last changed.
func (o Operation) UpdatedAt() time.Time { return o.updatedAt }

// Result is set when the operation succeeded.
func (o Operation) Result() (Result, bool) { return o.result, o.status == StatusSucceeded }

// Failure is set when the operation failed.
func (o Operation) Failure() (Failure, bool) { return o.failure, o.status == StatusFailed }

// History returns the statuses the operation entered, oldest first.
func (o Operation) History() []HistoryEntry { return slices.Clone(o.history) }

// VisibleTo reports whether a user may see the operation: only its creator.
func (o Operation) VisibleTo(userID string) bool { return userID != "" && userID == o.createdBy }

func (o *Operation) moveTo(to Status, at time.Time) {
	at = at.UTC()
	o.status, o.updatedAt = to, at
	o.history = append(o.history, HistoryEntry{Status: to, At: at})
}

func (o *Operation) finished() error {
	return fmt.Errorf("operation %s is %s: %w", o.id, o.status, ErrFinished)
}

// Start: a worker took the job (pending → running). On a running operation
// it changes nothing: the worker of a redelivered job resumes.
func (o *Operation) Start(at time.Time) error {
	switch o.status {
	case StatusRunning:
		return nil
	case StatusPending:
		o.moveTo(StatusRunning, at)
		return nil
	default:
		return o.finished()
	}
}

// Succeed records the result (running → succeeded).
func (o *Operation) Succeed(r Result, at time.Time) error {
	switch {
	case o.status.Final():
		return o.finished()
	case o.status != StatusRunning:
		return fmt.Errorf("operation %s is %s: %w", o.id, o.status, ErrNotRunning)
	case r.URL == "" || r.Rows < 0 || r.ExpiresAt.IsZero():
		return fmt.Errorf("operation %s: a result needs a URL, a row count and an expiry", o.id)
	}
	r.ExpiresAt = r.ExpiresAt.UTC()
	o.result = r
	o.moveTo(StatusSucceeded, at)
	return nil
}

// Fail records why the operation will not produce a result (pending or
// running → failed).
func (o *Operation) Fail(f Failure, at time.Time) error {
	switch {
	case o.status.Final():
		return o.finished()
	case f.Code == "":
		return fmt.Errorf("operation %s: a failure needs a code", o.id)
	}
	o.failure = f
	o.moveTo(StatusFailed, at)
	return nil
}

// Snapshot is the stored form of an operation.
type Snapshot struct {
	ID        string
	Kind      Kind
	ClassID   string
	CreatedBy string
	Status    Status
	CreatedAt time.Time
	UpdatedAt time.Time
	Result    Result
	Failure   Failure
	History   []HistoryEntry
}

// FromSnapshot rehydrates a stored operation without validation.
func FromSnapshot(s Snapshot) Operation {
	return Operation{
		id: s.ID, kind: s.Kind, classID: s.ClassID, createdBy: s.CreatedBy, status: s.Status,
		createdAt: s.CreatedAt, updatedAt: s.UpdatedAt, result: s.Result, failure: s.Failure,
		history: slices.Clone(s.History),
	}
}

// Snapshot returns the stored form of the operation.
func (o Operation) Snapshot() Snapshot {
	return Snapshot{
		ID: o.id, Kind: o.kind, ClassID: o.classID, CreatedBy: o.createdBy, Status: o.status,
		CreatedAt: o.createdAt, UpdatedAt: o.updatedAt, Result: o.result, Failure: o.failure,
		History: slices.Clone(o.history),
	}
}

// Equal reports whether two operations are the same in every stored field:
// what a store compares to skip a write that would change nothing.
func (o Operation) Equal(p Operation) bool {
	return o.id == p.id && o.kind == p.kind && o.classID == p.classID && o.createdBy == p.createdBy &&
		o.status == p.status && o.createdAt.Equal(p.createdAt) && o.updatedAt.Equal(p.updatedAt) &&
		o.result.URL == p.result.URL && o.result.Rows == p.result.Rows &&
		o.result.ExpiresAt.Equal(p.result.ExpiresAt) && o.result.ObjectKey == p.result.ObjectKey &&
		o.failure == p.failure &&
		slices.EqualFunc(o.history, p.history, func(a, b HistoryEntry) bool {
			return a.Status == b.Status && a.At.Equal(b.At)
		})
}
