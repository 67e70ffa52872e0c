package inbox

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/clubdev/club/events"
)

// DefaultRetention is how long inbox rows are kept.
const DefaultRetention = 7 * 24 * time.Hour

var (
	// ErrDuplicate: this consumer already applied this event. Not a failure.
	ErrDuplicate = errors.New("event already applied by this consumer")
	// ErrContractConflict: this consumer applied an event with this id and
	// different content. Permanent.
	ErrContractConflict = errors.New("event id seen before with different content")
)

// Record is one inbox row: consumer applied event EventID with content
// Fingerprint at ProcessedAt.
type Record struct {
	Consumer    string
	EventID     string
	EventType   events.Type
	Fingerprint string
	ProcessedAt time.Time
}

// NewRecord returns the row for consumer applying env at processedAt.
func NewRecord(consumer string, env events.Envelope, processedAt time.Time) Record {
	return Record{
		Consumer:    consumer,
		EventID:     env.EventID,
		EventType:   env.Type,
		Fingerprint: env.Fingerprint(),
		ProcessedAt: processedAt.UTC(),
	}
}

// Check classifies a repeated delivery against the stored row: ErrDuplicate if
// the content is the same, ErrContractConflict (with both fingerprints, for
// the investigation) if not.
func (r Record) Check(fingerprint string) error {
	if r.Fingerprint == fingerprint {
		return fmt.Errorf("consumer %s, event %s: %w", r.Consumer, r.EventID, ErrDuplicate)
	}
	return fmt.Errorf("consumer %s, event %s (%s): stored fingerprint %s, received %s: %w",
		r.Consumer, r.EventID, r.EventType, r.Fingerprint, fingerprint, ErrContractConflict)
}

// ValidateConsumer checks a consumer name: non-empty, lower-case letters,
// digits, '-' and '_' (it becomes part of storage keys).
func ValidateConsumer(name string) error {
	if name == "" {
		return errors.New("consumer name is empty")
	}
	if strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		return fmt.Errorf("consumer name %q: use a-z, 0-9, '-' and '_'", name)
	}
	return nil
}
