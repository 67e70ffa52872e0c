package store

import (
	"errors"
	"time"

	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/inbox"
	"github.com/clubdev/club/internal/club/outbox"
)

// Config names the tables and sets the retention periods. Table names are
// injected (from the stack's outputs through the functions' environment);
// everything else has a default.
type Config struct {
	// ClubTable holds classes, enrollments, seats, profiles, idempotency
	// records, inbox rows, rosters, counters and leases.
	ClubTable string
	// OutboxTable holds the outbox; its stream feeds the relay.
	OutboxTable string

	// IdempotencyRetention: how long an idempotency record protects a key
	// (default idempotency.DefaultRetention, 24 h).
	IdempotencyRetention time.Duration
	// InboxRetention: how long an inbox row is kept; must cover the replay
	// window (default inbox.DefaultRetention, 7 days).
	InboxRetention time.Duration
	// OutboxRetention: how long a published outbox row is kept (default
	// outbox.DefaultRetention, 7 days). Pending rows never expire.
	OutboxRetention time.Duration

	// Now is the clock for expiry stamps, inbox processing times and the
	// roster's as-of (default time.Now).
	Now func() time.Time
}

// withDefaults returns c with every unset optional field set.
func (c Config) withDefaults() Config {
	if c.IdempotencyRetention == 0 {
		c.IdempotencyRetention = idempotency.DefaultRetention
	}
	if c.InboxRetention == 0 {
		c.InboxRetention = inbox.DefaultRetention
	}
	if c.OutboxRetention == 0 {
		c.OutboxRetention = outbox.DefaultRetention
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.ClubTable == "" {
		errs = append(errs, errors.New("store: ClubTable is required"))
	}
	if c.OutboxTable == "" {
		errs = append(errs, errors.New("store: OutboxTable is required"))
	}
	if c.ClubTable != "" && c.ClubTable == c.OutboxTable {
		errs = append(errs, errors.New("store: ClubTable and OutboxTable must differ (only outbox rows may reach the stream)"))
	}
	for name, d := range map[string]time.Duration{
		"IdempotencyRetention": c.IdempotencyRetention,
		"InboxRetention":       c.InboxRetention,
		"OutboxRetention":      c.OutboxRetention,
	} {
		if d < 0 {
			errs = append(errs, errors.New("store: "+name+" must not be negative"))
		}
	}
	return errors.Join(errs...)
}
