package purchase

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clubdev/club/internal/club"
)

// Limits of an intensive's input fields (docs/principles.md §5).
const (
	MinCapacity        = 1
	MaxCapacity        = 10000
	MaxTitleLength     = 200 // characters
	MinHoldSeconds     = 5
	MaxHoldSeconds     = 3600
	DefaultHoldSeconds = 900
	// MaxAmountCents bounds a price: more is a typo, not a course.
	MaxAmountCents = 100_000_000
)

// Price is an amount in the currency's minor unit.
type Price struct {
	AmountCents int64
	Currency    string // ISO 4217, three upper-case letters
}

func (p Price) validate() error {
	if p.AmountCents < 1 || p.AmountCents > MaxAmountCents {
		return club.Invalid("price.amount_cents", "must be between 1 and %d", MaxAmountCents)
	}
	if len(p.Currency) != 3 {
		return club.Invalid("price.currency", "must be a three-letter ISO 4217 code")
	}
	for i := range 3 {
		if c := p.Currency[i]; c < 'A' || c > 'Z' {
			return club.Invalid("price.currency", "must be a three-letter upper-case ISO 4217 code")
		}
	}
	return nil
}

// Intensive is a paid course with a fixed number of seats. Its seats are in
// three pools that always add up to the capacity: free, held (by purchases
// waiting for payment) and taken (by confirmed purchases). A purchase may
// start only while a seat is free.
type Intensive struct {
	id          string
	teacherID   string
	title       string
	capacity    int
	seatsHeld   int
	seatsTaken  int
	price       Price
	holdSeconds int
	createdAt   time.Time
}

// NewIntensive returns an intensive with every seat free. holdSeconds 0
// means DefaultHoldSeconds. The error is a *club.ValidationError naming the
// first invalid field (title, capacity, price, hold_seconds); id and
// teacherID come from the server and must not be empty.
func NewIntensive(id, teacherID, title string, capacity int, price Price, holdSeconds int, createdAt time.Time) (Intensive, error) {
	title = strings.TrimSpace(title)
	if holdSeconds == 0 {
		holdSeconds = DefaultHoldSeconds
	}
	switch {
	case id == "":
		return Intensive{}, club.Invalid("intensive_id", "is required")
	case teacherID == "":
		return Intensive{}, club.Invalid("teacher_id", "is required")
	case title == "":
		return Intensive{}, club.Invalid("title", "is required")
	case utf8.RuneCountInString(title) > MaxTitleLength:
		return Intensive{}, club.Invalid("title", "must be at most %d characters", MaxTitleLength)
	case capacity < MinCapacity || capacity > MaxCapacity:
		return Intensive{}, club.Invalid("capacity", "must be between %d and %d", MinCapacity, MaxCapacity)
	}
	if err := price.validate(); err != nil {
		return Intensive{}, err
	}
	if holdSeconds < MinHoldSeconds || holdSeconds > MaxHoldSeconds {
		return Intensive{}, club.Invalid("hold_seconds", "must be between %d and %d", MinHoldSeconds, MaxHoldSeconds)
	}
	return Intensive{
		id: id, teacherID: teacherID, title: title, capacity: capacity,
		price: price, holdSeconds: holdSeconds, createdAt: createdAt.UTC(),
	}, nil
}

func (i Intensive) ID() string           { return i.id }
func (i Intensive) TeacherID() string    { return i.teacherID }
func (i Intensive) Title() string        { return i.title }
func (i Intensive) Capacity() int        { return i.capacity }
func (i Intensive) SeatsHeld() int       { return i.seatsHeld }
func (i Intensive) SeatsTaken() int      { return i.seatsTaken }
func (i Intensive) Price() Price         { return i.price }
func (i Intensive) CreatedAt() time.Time { return i.createdAt }

// SeatsFree is the number of seats a new purchase could hold now.
func (i Intensive) SeatsFree() int { return max(i.capacity-i.seatsTaken-i.seatsHeld, 0) }

// HoldDuration is how long a purchase holds a seat waiting for payment.
func (i Intensive) HoldDuration() time.Duration { return time.Duration(i.holdSeconds) * time.Second }

// HoldSeconds is HoldDuration in seconds, as the API shows it.
func (i Intensive) HoldSeconds() int { return i.holdSeconds }

// IntensiveSnapshot is the stored form of an intensive.
type IntensiveSnapshot struct {
	ID          string
	TeacherID   string
	Title       string
	Capacity    int
	SeatsHeld   int
	SeatsTaken  int
	Price       Price
	HoldSeconds int
	CreatedAt   time.Time
}

// IntensiveFromSnapshot rehydrates a stored intensive without validation.
func IntensiveFromSnapshot(s IntensiveSnapshot) Intensive {
	return Intensive{
		id: s.ID, teacherID: s.TeacherID, title: s.Title, capacity: s.Capacity,
		seatsHeld: s.SeatsHeld, seatsTaken: s.SeatsTaken, price: s.Price,
		holdSeconds: s.HoldSeconds, createdAt: s.CreatedAt,
	}
}

// Snapshot returns the stored form of the intensive.
func (i Intensive) Snapshot() IntensiveSnapshot {
	return IntensiveSnapshot{
		ID: i.id, TeacherID: i.teacherID, Title: i.title, Capacity: i.capacity,
		SeatsHeld: i.seatsHeld, SeatsTaken: i.seatsTaken, Price: i.price,
		HoldSeconds: i.holdSeconds, CreatedAt: i.createdAt,
	}
}
