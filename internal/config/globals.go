package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/store"
)

// The environment variables of the template's Globals.Function section.
const (
	EnvClubTable       = "CLUB_TABLE"
	EnvOutboxTable     = "OUTBOX_TABLE"
	EnvInboxRetention  = "INBOX_RETENTION"
	EnvOutboxRetention = "OUTBOX_RETENTION"
	EnvAddressPolicy   = "ADDRESS_POLICY"
)

// Globals are the settings every function gets from the template.
type Globals struct {
	ClubTable   string
	OutboxTable string
	// InboxRetention and OutboxRetention are zero when unset: the store then
	// uses the domain's defaults (inbox.DefaultRetention,
	// outbox.DefaultRetention).
	InboxRetention  time.Duration
	OutboxRetention time.Duration
	AddressPolicy   profile.AddressPolicy
}

// LoadGlobals reads the Globals through getenv (os.Getenv in main) and
// reports every missing or invalid value at once. The table names are
// required; a retention, if set, must be a positive duration such as "7d"; an
// unset address policy is profile.DefaultAddressPolicy.
func LoadGlobals(getenv func(string) string) (Globals, error) {
	var g Globals
	var errs []error
	g.ClubTable = getenv(EnvClubTable)
	if g.ClubTable == "" {
		errs = append(errs, fmt.Errorf("%s is required", EnvClubTable))
	}
	g.OutboxTable = getenv(EnvOutboxTable)
	if g.OutboxTable == "" {
		errs = append(errs, fmt.Errorf("%s is required", EnvOutboxTable))
	}
	var err error
	if g.InboxRetention, err = optionalPositive(getenv, EnvInboxRetention); err != nil {
		errs = append(errs, err)
	}
	if g.OutboxRetention, err = optionalPositive(getenv, EnvOutboxRetention); err != nil {
		errs = append(errs, err)
	}
	if g.AddressPolicy, err = profile.ParseAddressPolicy(getenv(EnvAddressPolicy)); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", EnvAddressPolicy, err))
	}
	if err := errors.Join(errs...); err != nil {
		return Globals{}, fmt.Errorf("configuration: %w", err)
	}
	return g, nil
}

// optionalPositive parses an optional duration variable; unset is zero.
func optionalPositive(getenv func(string) string, name string) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s: %q must be positive", name, v)
	}
	return d, nil
}

// Store returns the store configuration these settings describe; the
// idempotency retention and the clock keep the store's defaults.
func (g Globals) Store() store.Config {
	return store.Config{
		ClubTable:       g.ClubTable,
		OutboxTable:     g.OutboxTable,
		InboxRetention:  g.InboxRetention,
		OutboxRetention: g.OutboxRetention,
	}
}
