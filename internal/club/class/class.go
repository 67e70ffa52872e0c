package class

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clubdev/club/internal/club"
)

// Limits of a class's input fields.
const (
	MinCapacity    = 1
	MaxCapacity    = 10000
	MaxTitleLength = 200 // characters
)

// Class is a lesson with a fixed number of seats.
type Class struct {
	id         string
	teacherID  string
	title      string
	capacity   int
	seatsTaken int
	startsAt   time.Time
}

// New returns a class with no seat taken. The error is a
// *club.ValidationError naming the first invalid field (title, capacity,
// starts_at), checked in that order; id and teacherID come from the server and
// must not be empty.
func New(id, teacherID, title string, capacity int, startsAt time.Time) (Class, error) {
	title = strings.TrimSpace(title)
	switch {
	case id == "":
		return Class{}, club.Invalid("class_id", "is required")
	case teacherID == "":
		return Class{}, club.Invalid("teacher_id", "is required")
	case title == "":
		return Class{}, club.Invalid("title", "is required")
	case utf8.RuneCountInString(title) > MaxTitleLength:
		return Class{}, club.Invalid("title", "must be at most %d characters", MaxTitleLength)
	case capacity < MinCapacity || capacity > MaxCapacity:
		return Class{}, club.Invalid("capacity", "must be between %d and %d", MinCapacity, MaxCapacity)
	case startsAt.IsZero():
		return Class{}, club.Invalid("starts_at", "is required")
	}
	return Class{id: id, teacherID: teacherID, title: title, capacity: capacity, startsAt: startsAt.UTC()}, nil
}

// Snapshot is the stored form of a class.
type Snapshot struct {
	ID         string
	TeacherID  string
	Title      string
	Capacity   int
	SeatsTaken int
	StartsAt   time.Time
}

// FromSnapshot rehydrates a stored class. It trusts its input: it is for
// adapters reading what New and the seat methods produced.
func FromSnapshot(s Snapshot) Class {
	return Class{
		id: s.ID, teacherID: s.TeacherID, title: s.Title,
		capacity: s.Capacity, seatsTaken: s.SeatsTaken, startsAt: s.StartsAt,
	}
}

// Snapshot returns the stored form of the class.
func (c Class) Snapshot() Snapshot {
	return Snapshot{
		ID: c.id, TeacherID: c.teacherID, Title: c.title,
		Capacity: c.capacity, SeatsTaken: c.seatsTaken, StartsAt: c.startsAt,
	}
}

func (c Class) ID() string          { return c.id }
func (c Class) TeacherID() string   { return c.teacherID }
func (c Class) Title() string       { return c.title }
func (c Class) Capacity() int       { return c.capacity }
func (c Class) SeatsTaken() int     { return c.seatsTaken }
func (c Class) SeatsLeft() int      { return max(c.capacity-c.seatsTaken, 0) }
func (c Class) StartsAt() time.Time { return c.startsAt }
func (c Class) Full() bool          { return c.seatsTaken >= c.capacity }

// TakeSeat takes one seat or returns club.ErrClassFull.
func (c *Class) TakeSeat() error {
	if c.Full() {
		return club.ErrClassFull
	}
	c.seatsTaken++
	return nil
}

// ReleaseSeat gives one seat back. It never goes below zero: releasing more
// seats than were taken would be a bug elsewhere, and a negative count would
// hide it by overbooking later.
func (c *Class) ReleaseSeat() {
	if c.seatsTaken > 0 {
		c.seatsTaken--
	}
}

// Repository stores classes. Seats are changed only by the enrollment
// transactions (see package enrollment), never through this port.
type Repository interface {
	// Create stores a new class. Creating a class whose id exists is an error.
	Create(ctx context.Context, c Class) error
	// Get returns a class or club.ErrClassNotFound. The seat count is as
	// committed (strongly consistent read).
	Get(ctx context.Context, id string) (Class, error)
}
