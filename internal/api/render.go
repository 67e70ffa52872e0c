package api

import (
	"time"

	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/club/projection"
)

// The response documents of docs/principles.md §5. Times are RFC 3339 in UTC.

type errorDocument struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

type classDocument struct {
	ClassID    string    `json:"class_id"`
	Title      string    `json:"title"`
	Capacity   int       `json:"capacity"`
	SeatsTaken int       `json:"seats_taken"`
	SeatsLeft  int       `json:"seats_left"`
	StartsAt   time.Time `json:"starts_at"`
	TeacherID  string    `json:"teacher_id"`
}

func renderClass(c class.Class) classDocument {
	return classDocument{
		ClassID: c.ID(), Title: c.Title(), Capacity: c.Capacity(),
		SeatsTaken: c.SeatsTaken(), SeatsLeft: c.SeatsLeft(),
		StartsAt: c.StartsAt().UTC(), TeacherID: c.TeacherID(),
	}
}

// enrollmentDocument is one representation for every enrollment answer
// (create, get, cancel), so that a client needs one type.
type enrollmentDocument struct {
	EnrollmentID string               `json:"enrollment_id"`
	ClassID      string               `json:"class_id"`
	StudentID    string               `json:"student_id"`
	Status       enrollment.Status    `json:"status"`
	CreatedAt    time.Time            `json:"created_at"`
	CancelledAt  *time.Time           `json:"cancelled_at,omitempty"`
	Notification notificationDocument `json:"notification"`
}

type notificationDocument struct {
	Status   enrollment.NotificationStatus `json:"status"`
	Attempts int                           `json:"attempts"`
	SentAt   *time.Time                    `json:"sent_at,omitempty"`
	// LastError is why the last failed attempt failed (pending, unknown
	// or failed notifications); absent once sent.
	LastError string `json:"last_error,omitempty"`
}

func renderEnrollment(e enrollment.Enrollment) enrollmentDocument {
	n := e.Notification()
	return enrollmentDocument{
		EnrollmentID: e.ID(), ClassID: e.ClassID(), StudentID: e.StudentID(),
		Status: e.Status(), CreatedAt: e.CreatedAt().UTC(), CancelledAt: optionalTime(e.CancelledAt()),
		Notification: notificationDocument{Status: n.Status(), Attempts: n.Attempts(), SentAt: optionalTime(n.SentAt()), LastError: n.LastError()},
	}
}

type rosterDocument struct {
	ClassID  string          `json:"class_id"`
	Students []rosterStudent `json:"students"`
	// AsOf is when the projection last changed; null if it never did.
	AsOf *time.Time `json:"as_of"`
}

type rosterStudent struct {
	StudentID  string    `json:"student_id"`
	EnrolledAt time.Time `json:"enrolled_at"`
}

func renderRoster(r projection.Roster) rosterDocument {
	doc := rosterDocument{ClassID: r.ClassID, Students: make([]rosterStudent, 0, len(r.Students)), AsOf: optionalTime(r.AsOf)}
	for _, s := range r.Students {
		doc.Students = append(doc.Students, rosterStudent{StudentID: s.StudentID, EnrolledAt: s.EnrolledAt.UTC()})
	}
	return doc
}

type statsDocument struct {
	ClassID            string `json:"class_id"`
	EnrollmentsTotal   int64  `json:"enrollments_total"`
	CancellationsTotal int64  `json:"cancellations_total"`
}

func renderStats(s projection.Stats) statsDocument {
	return statsDocument{ClassID: s.ClassID, EnrollmentsTotal: s.EnrollmentsTotal, CancellationsTotal: s.CancellationsTotal}
}

type profileDocument struct {
	StudentID   string `json:"student_id"`
	Email       string `json:"email"`
	DisplayName string `json:"display_name"`
}

func renderProfile(p profile.Profile) profileDocument {
	return profileDocument{StudentID: p.UserID, Email: p.Email, DisplayName: p.DisplayName}
}

func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
