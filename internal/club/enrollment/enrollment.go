package enrollment

import (
	"errors"
	"time"

	"github.com/clubdev/club/internal/club"
)

// Status is the state of an enrollment.
type Status string

const (
	StatusEnrolled  Status = "enrolled"
	StatusCancelled Status = "cancelled"
)

// ErrNotEnrolled: the enrollment is not in status enrolled (it was cancelled).
var ErrNotEnrolled = errors.New("enrollment is not active")

// Enrollment is one student's seat in one class.
type Enrollment struct {
	id           string
	classID      string
	studentID    string
	teacherID    string
	status       Status
	createdAt    time.Time
	cancelledAt  time.Time
	notification Notification
	address      string
}

// New returns an active enrollment with a pending notification. teacherID is
// the class's teacher, copied so that visibility checks need no second read.
func New(id, classID, studentID, teacherID string, createdAt time.Time) (Enrollment, error) {
	switch {
	case id == "":
		return Enrollment{}, club.Invalid("enrollment_id", "is required")
	case classID == "":
		return Enrollment{}, club.Invalid("class_id", "is required")
	case studentID == "":
		return Enrollment{}, club.Invalid("student_id", "is required")
	case teacherID == "":
		return Enrollment{}, club.Invalid("teacher_id", "is required")
	case createdAt.IsZero():
		return Enrollment{}, club.Invalid("created_at", "is required")
	}
	return Enrollment{
		id: id, classID: classID, studentID: studentID, teacherID: teacherID,
		status: StatusEnrolled, createdAt: createdAt.UTC(),
		notification: Notification{status: NotificationPending},
	}, nil
}

func (e Enrollment) ID() string                 { return e.id }
func (e Enrollment) ClassID() string            { return e.classID }
func (e Enrollment) StudentID() string          { return e.studentID }
func (e Enrollment) TeacherID() string          { return e.teacherID }
func (e Enrollment) Status() Status             { return e.status }
func (e Enrollment) CreatedAt() time.Time       { return e.createdAt }
func (e Enrollment) CancelledAt() time.Time     { return e.cancelledAt }
func (e Enrollment) Notification() Notification { return e.notification }

// CapturedAddress is the e-mail address captured at enrollment under the
// at_enrollment address policy, "" otherwise (see package profile).
func (e Enrollment) CapturedAddress() string { return e.address }

// CaptureAddress stores the student's address on the enrollment (only under
// the at_enrollment policy; never put it in an event).
func (e *Enrollment) CaptureAddress(email string) { e.address = email }

// VisibleTo reports whether a user may see the enrollment: its student and
// the class's teacher may.
func (e Enrollment) VisibleTo(userID string) bool {
	return userID != "" && (userID == e.studentID || userID == e.teacherID)
}

// Cancel moves the enrollment to cancelled, or returns ErrNotEnrolled.
func (e *Enrollment) Cancel(at time.Time) error {
	if e.status != StatusEnrolled {
		return ErrNotEnrolled
	}
	e.status = StatusCancelled
	e.cancelledAt = at.UTC()
	return nil
}

// Snapshot is the stored form of an enrollment.
type Snapshot struct {
	ID                    string
	ClassID               string
	StudentID             string
	TeacherID             string
	Status                Status
	CreatedAt             time.Time
	CancelledAt           time.Time // zero unless cancelled
	NotificationStatus    NotificationStatus
	NotificationAttempts  int
	NotificationSentAt    time.Time // zero unless sent
	NotificationLastError string    // "" unless an attempt failed since the last send
	CapturedAddress       string    // "" unless the at_enrollment policy captured one
}

// FromSnapshot rehydrates a stored enrollment without validation.
func FromSnapshot(s Snapshot) Enrollment {
	return Enrollment{
		id: s.ID, classID: s.ClassID, studentID: s.StudentID, teacherID: s.TeacherID,
		status: s.Status, createdAt: s.CreatedAt, cancelledAt: s.CancelledAt,
		notification: Notification{status: s.NotificationStatus, attempts: s.NotificationAttempts, sentAt: s.NotificationSentAt, lastError: s.NotificationLastError},
		address:      s.CapturedAddress,
	}
}

// Snapshot returns the stored form of the enrollment.
func (e Enrollment) Snapshot() Snapshot {
	return Snapshot{
		ID: e.id, ClassID: e.classID, StudentID: e.studentID, TeacherID: e.teacherID,
		Status: e.status, CreatedAt: e.createdAt, CancelledAt: e.cancelledAt,
		NotificationStatus:    e.notification.status,
		NotificationAttempts:  e.notification.attempts,
		NotificationSentAt:    e.notification.sentAt,
		NotificationLastError: e.notification.lastError,
		CapturedAddress:       e.address,
	}
}

// WithNotification returns a copy of e with its notification replaced: for
// stores that apply a NotificationStore update.
func (e Enrollment) WithNotification(n Notification) Enrollment {
	e.notification = n
	return e
}
