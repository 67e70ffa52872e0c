package profile

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clubdev/club/internal/club"
)

// Limits of the profile's fields.
const (
	MaxEmailLength       = 254 // the SMTP path limit
	MaxDisplayNameLength = 100 // characters
)

// Profile is a user's contact details. Build one with New.
type Profile struct {
	UserID      string
	Email       string
	DisplayName string
	UpdatedAt   time.Time
}

// New validates and normalises a profile: the e-mail must be a bare address
// (no display name, no angle brackets) and the display name 1 to 100
// characters after trimming. The error is a *club.ValidationError naming the
// field (email, display_name).
func New(userID, email, displayName string, now time.Time) (Profile, error) {
	email = strings.TrimSpace(email)
	displayName = strings.TrimSpace(displayName)
	if userID == "" {
		return Profile{}, club.Invalid("student_id", "is required")
	}
	if email == "" {
		return Profile{}, club.Invalid("email", "is required")
	}
	if len(email) > MaxEmailLength {
		return Profile{}, club.Invalid("email", "must be at most %d bytes", MaxEmailLength)
	}
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email || addr.Name != "" {
		return Profile{}, club.Invalid("email", "must be a plain e-mail address like name@example.com")
	}
	if displayName == "" {
		return Profile{}, club.Invalid("display_name", "is required")
	}
	if utf8.RuneCountInString(displayName) > MaxDisplayNameLength {
		return Profile{}, club.Invalid("display_name", "must be at most %d characters", MaxDisplayNameLength)
	}
	return Profile{UserID: userID, Email: email, DisplayName: displayName, UpdatedAt: now.UTC()}, nil
}

// FromToken builds the profile a user has until setting one with
// PUT /me/profile: the e-mail claim of the user's verified token, with the
// address's local part as display name (the token carries no better name).
// The error is a *club.ValidationError when the claim is not a usable
// address.
func FromToken(userID, email string, now time.Time) (Profile, error) {
	email = strings.TrimSpace(email)
	name := email
	if at := strings.LastIndexByte(email, '@'); at > 0 {
		name = email[:at]
	}
	if utf8.RuneCountInString(name) > MaxDisplayNameLength {
		name = string([]rune(name)[:MaxDisplayNameLength])
	}
	return New(userID, email, name, now)
}

// Store keeps profiles.
type Store interface {
	// Put creates or replaces the profile of p.UserID (last write wins).
	Put(ctx context.Context, p Profile) error
	// Get returns the profile of a user or club.ErrNotFound.
	Get(ctx context.Context, userID string) (Profile, error)
}

// AddressPolicy chooses the address a notification goes to.
type AddressPolicy string

const (
	// PolicyCurrent sends to the profile's address at send time.
	PolicyCurrent AddressPolicy = "current"
	// PolicyAtEnrollment sends to the address captured at enrollment.
	PolicyAtEnrollment AddressPolicy = "at_enrollment"
)

// DefaultAddressPolicy is PolicyCurrent: personal data stays in one place.
const DefaultAddressPolicy = PolicyCurrent

// ParseAddressPolicy parses a configuration value; "" means the default.
func ParseAddressPolicy(s string) (AddressPolicy, error) {
	switch p := AddressPolicy(s); p {
	case "":
		return DefaultAddressPolicy, nil
	case PolicyCurrent, PolicyAtEnrollment:
		return p, nil
	default:
		return "", fmt.Errorf("address policy %q: want %q or %q", s, PolicyCurrent, PolicyAtEnrollment)
	}
}

// ErrNoAddress: no address is known for the recipient under the configured
// policy. It is permanent for the message at hand.
var ErrNoAddress = errors.New("no e-mail address for recipient")

// Finder reads profiles; Store satisfies it.
type Finder interface {
	Get(ctx context.Context, userID string) (Profile, error)
}

// Resolver applies an address policy.
type Resolver struct {
	Policy   AddressPolicy
	Profiles Finder
}

// Address returns where to send mail for a student. captured is the address
// stored on the enrollment under PolicyAtEnrollment ("" otherwise). Under
// PolicyCurrent the profile is read now; a missing profile is ErrNoAddress, a
// failing store is returned as is (transient).
func (r Resolver) Address(ctx context.Context, studentID, captured string) (string, error) {
	switch r.Policy {
	case PolicyAtEnrollment:
		if captured == "" {
			return "", fmt.Errorf("student %s: nothing captured at enrollment: %w", studentID, ErrNoAddress)
		}
		return captured, nil
	case PolicyCurrent, "":
		p, err := r.Profiles.Get(ctx, studentID)
		if errors.Is(err, club.ErrNotFound) {
			return "", fmt.Errorf("student %s has no profile: %w", studentID, ErrNoAddress)
		}
		if err != nil {
			return "", fmt.Errorf("read profile of %s: %w", studentID, err)
		}
		return p.Email, nil
	default:
		return "", fmt.Errorf("unknown address policy %q", r.Policy)
	}
}
