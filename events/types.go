package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Type names an event or job type, such as "enrollment.created".
type Type string

// The types this build reads and writes.
const (
	TypeEnrollmentCreated   Type = "enrollment.created"
	TypeEnrollmentCancelled Type = "enrollment.cancelled"
	TypePurchaseRequested   Type = "purchase.requested"
	TypeRefundRequested     Type = "refund.requested"
	TypeExportRequested     Type = "export.requested"
)

// Kind says how a type is delivered, which is part of its contract: the relay
// routes by it.
type Kind string

const (
	// KindEvent is a fact that any number of consumers need independently;
	// it is fanned out through the events topic.
	KindEvent Kind = "event"
	// KindJob is work for exactly one worker of a group; it goes to the queue
	// of its work class.
	KindJob Kind = "job"
	// KindWorkflow starts a long-running process (a state machine execution
	// named after the aggregate id).
	KindWorkflow Kind = "workflow"
)

// Payload is the typed data of one event type. The set is closed: only the
// types of this package implement it.
type Payload interface {
	// EventType is the type this payload belongs to.
	EventType() Type
	// AggregateID is the id of the business object the event is about; it is
	// copied into the envelope.
	AggregateID() string
	validate() error
}

// TypeVersion is one readable version of one type.
type TypeVersion struct {
	Type    Type
	Version int
}

func (tv TypeVersion) String() string { return fmt.Sprintf("%s.v%d", tv.Type, tv.Version) }

type typeSpec struct {
	kind     Kind
	versions []int // every version readers accept, ascending
	current  int   // the version New writes
	decode   func(data []byte, version int) (Payload, error)
}

func (s typeSpec) supports(v int) bool { return slices.Contains(s.versions, v) }

var registry = map[Type]typeSpec{
	TypeEnrollmentCreated: {
		kind: KindEvent, versions: []int{1, 2}, current: 2,
		decode: decodeEnrollmentCreated,
	},
	TypeEnrollmentCancelled: {
		kind: KindEvent, versions: []int{1}, current: 1,
		decode: decodeAs[EnrollmentCancelled],
	},
	TypePurchaseRequested: {
		kind: KindWorkflow, versions: []int{1}, current: 1,
		decode: decodeAs[PurchaseRequested],
	},
	TypeRefundRequested: {
		kind: KindWorkflow, versions: []int{1}, current: 1,
		decode: decodeAs[RefundRequested],
	},
	TypeExportRequested: {
		kind: KindJob, versions: []int{1}, current: 1,
		decode: decodeAs[ExportRequested],
	},
}

// decodeAs is a tolerant reader: fields it does not know are ignored, so a
// writer may add optional fields within a version without breaking readers.
func decodeAs[P Payload](data []byte, _ int) (Payload, error) {
	var p P
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	return p, nil
}

func decodeEnrollmentCreated(data []byte, version int) (Payload, error) {
	p, err := decodeAs[EnrollmentCreated](data, version)
	if err != nil {
		return nil, err
	}
	ec := p.(EnrollmentCreated)
	if version < 2 {
		// class_starts_at is not part of version 1; a field a version does not
		// define is ignored, like any other unknown field.
		ec.ClassStartsAt = nil
	}
	return ec, nil
}

// Supported lists every type and version this build reads, sorted by type and
// then version.
func Supported() []TypeVersion {
	var out []TypeVersion
	for t, s := range registry {
		for _, v := range s.versions {
			out = append(out, TypeVersion{t, v})
		}
	}
	slices.SortFunc(out, func(a, b TypeVersion) int {
		if a.Type != b.Type {
			if a.Type < b.Type {
				return -1
			}
			return 1
		}
		return a.Version - b.Version
	})
	return out
}

// KindOf returns the delivery kind of a type; ok is false for an unknown type.
func KindOf(t Type) (kind Kind, ok bool) {
	s, ok := registry[t]
	return s.kind, ok
}

// CurrentVersion returns the version [New] writes for a type.
func CurrentVersion(t Type) (version int, ok bool) {
	s, ok := registry[t]
	return s.current, ok
}

// EnrollmentCreated: a student took a seat in a class. The envelope's
// aggregate_id is the enrollment id and occurred_at is the enrollment time.
//
// Version 2 added ClassStartsAt (optional), so that the notifier can say when
// the class starts without reading the class. Readers accept both versions;
// in a version 1 event ClassStartsAt is nil.
type EnrollmentCreated struct {
	EnrollmentID string `json:"enrollment_id"`
	ClassID      string `json:"class_id"`
	StudentID    string `json:"student_id"`
	// ClassStartsAt is set from version 2 on.
	ClassStartsAt *time.Time `json:"class_starts_at,omitempty"`
}

func (EnrollmentCreated) EventType() Type       { return TypeEnrollmentCreated }
func (p EnrollmentCreated) AggregateID() string { return p.EnrollmentID }
func (p EnrollmentCreated) validate() error {
	return required(map[string]string{
		"enrollment_id": p.EnrollmentID, "class_id": p.ClassID, "student_id": p.StudentID,
	})
}

// EnrollmentCancelled: a student gave up a seat. The envelope's aggregate_id is
// the enrollment id and occurred_at is the cancellation time.
type EnrollmentCancelled struct {
	EnrollmentID string `json:"enrollment_id"`
	ClassID      string `json:"class_id"`
	StudentID    string `json:"student_id"`
}

func (EnrollmentCancelled) EventType() Type       { return TypeEnrollmentCancelled }
func (p EnrollmentCancelled) AggregateID() string { return p.EnrollmentID }
func (p EnrollmentCancelled) validate() error {
	return required(map[string]string{
		"enrollment_id": p.EnrollmentID, "class_id": p.ClassID, "student_id": p.StudentID,
	})
}

// PurchaseRequested starts the purchase saga for a paid intensive: a seat is
// held until HoldExpiresAt. The aggregate_id is the purchase id, which also
// names the saga execution (so a repeated start is recognised).
type PurchaseRequested struct {
	PurchaseID    string    `json:"purchase_id"`
	IntensiveID   string    `json:"intensive_id"`
	StudentID     string    `json:"student_id"`
	AmountCents   int64     `json:"amount_cents"`
	Currency      string    `json:"currency"`
	HoldExpiresAt time.Time `json:"hold_expires_at"`
}

func (PurchaseRequested) EventType() Type       { return TypePurchaseRequested }
func (p PurchaseRequested) AggregateID() string { return p.PurchaseID }
func (p PurchaseRequested) validate() error {
	if err := required(map[string]string{
		"purchase_id": p.PurchaseID, "intensive_id": p.IntensiveID, "student_id": p.StudentID, "currency": p.Currency,
	}); err != nil {
		return err
	}
	if p.AmountCents <= 0 {
		return errors.New("amount_cents must be positive")
	}
	if len(p.Currency) != 3 {
		return fmt.Errorf("currency %q is not a three-letter code", p.Currency)
	}
	if p.HoldExpiresAt.IsZero() {
		return errors.New("missing hold_expires_at")
	}
	return nil
}

// RefundRequested starts the refund of a purchase's payment: a payment that
// came after the hold expired, or a person's decision (clubctl reconcile
// resolve). It is written with the purchase's move to refund_pending, in the
// same transaction, so the refund always has an owner: the relay (or the
// sweeper) starts the refund execution, named <purchase id>-refund. The
// aggregate_id is the purchase id.
type RefundRequested struct {
	PurchaseID string `json:"purchase_id"`
	// PaymentID is the provider's payment to refund.
	PaymentID string `json:"payment_id"`
	// Reason says why, for people reading the outbox or the execution: a
	// fixed phrase and ids, never who decided or their free text (the
	// outbox carries no personal data).
	Reason string `json:"reason"`
	// Attempt counts the purchase's refund intents, from 1: a refund a
	// person asks for after a failed one runs in an execution of its own
	// (<purchase id>-refund-<attempt>). Absent means 1.
	Attempt int `json:"attempt,omitempty"`
}

func (RefundRequested) EventType() Type       { return TypeRefundRequested }
func (p RefundRequested) AggregateID() string { return p.PurchaseID }
func (p RefundRequested) validate() error {
	return required(map[string]string{"purchase_id": p.PurchaseID, "payment_id": p.PaymentID, "reason": p.Reason})
}

// The kinds of export a job may ask for.
const (
	// ExportKindRosterExport is a class's roster; ClassID names the class.
	ExportKindRosterExport = "roster_export"
	// ExportKindTeacherReport is the nightly report of a teacher's classes
	// (RequestedBy); it names no class. Added within version 1: readers
	// that do not know it dead-letter the job as malformed, so the exporter
	// ships before the report scheduler.
	ExportKindTeacherReport = "teacher_report"
)

// ExportRequested is a job: build an export (a class roster, a teacher's
// report) as a file for the operation OperationID. The aggregate_id is the
// operation id.
type ExportRequested struct {
	OperationID string `json:"operation_id"`
	Kind        string `json:"kind"`
	// ClassID is the class of a roster export; empty for a teacher report.
	ClassID string `json:"class_id,omitempty"`
	// RequestedBy is the user id of the teacher who asked (for a report,
	// the teacher it is about); the result is visible to that user only.
	RequestedBy string `json:"requested_by"`
}

func (ExportRequested) EventType() Type       { return TypeExportRequested }
func (p ExportRequested) AggregateID() string { return p.OperationID }
func (p ExportRequested) validate() error {
	if err := required(map[string]string{
		"operation_id": p.OperationID, "kind": p.Kind, "requested_by": p.RequestedBy,
	}); err != nil {
		return err
	}
	switch p.Kind {
	case ExportKindRosterExport:
		if p.ClassID == "" {
			return errors.New("missing class_id")
		}
	case ExportKindTeacherReport:
		if p.ClassID != "" {
			return errors.New("a teacher report names no class_id")
		}
	default:
		return fmt.Errorf("unknown export kind %q", p.Kind)
	}
	return nil
}

// required reports the first empty field in name order, so that messages are
// deterministic.
func required(fields map[string]string) error {
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if fields[name] == "" {
			return fmt.Errorf("missing %s", name)
		}
	}
	return nil
}
