package main

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/clubdev/club/internal/config"
	"github.com/clubdev/club/internal/notifier"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/sqsconsumer"
)

// DefaultRetryBudget is how long a mail is owed through transient failures
// unless RETRY_BUDGET says otherwise.
const DefaultRetryBudget = 24 * time.Hour

// Config is the notifier's configuration, read once at start.
type Config struct {
	config.Globals
	// Queue holds QUEUE_URL, DLQ_URL and the optional MAX_RECEIVE_COUNT.
	Queue sqsconsumer.Config
	// ParkingURL is the queue where owed mail waits while the provider is
	// down (PARKING_QUEUE_URL; optional: without it owed mail comes back
	// with its backoff all through an outage); see notifier.Handler.
	ParkingURL string
	// MailAPIURL is the mail provider's base URL (MAIL_API_URL).
	MailAPIURL string
	// RetryBudget is how long a mail is retried through transient
	// failures before it is given up (RETRY_BUDGET, e.g. "24h" or "1d";
	// default DefaultRetryBudget); see sqsconsumer.Config.RetryBudget.
	RetryBudget time.Duration
	// BackoffCap caps the delay between two attempts (RETRY_BACKOFF_CAP;
	// default sqsconsumer.DefaultBackoffCap, 30 s): a recovered provider
	// gets every pending mail within it.
	BackoffCap time.Duration
	// ProbeInterval is the time between two probes of a provider that is
	// down (MAIL_PROBE_INTERVAL; default DefaultProbeInterval); see
	// Breaker.
	ProbeInterval time.Duration
	// MailTimeout bounds one call to the provider (MAIL_TIMEOUT, e.g.
	// "10s"; default mail.DefaultTimeout).
	MailTimeout time.Duration
	// LogLevel is AWS_LAMBDA_LOG_LEVEL, default INFO.
	LogLevel slog.Level
}

// loadConfig reads the environment through getenv and reports every problem
// at once.
func loadConfig(getenv func(string) string) (Config, error) {
	var cfg Config
	var errs []error
	var err error
	if cfg.Globals, err = config.LoadGlobals(getenv); err != nil {
		errs = append(errs, err)
	}
	if cfg.Queue, err = sqsconsumer.ConfigFromEnv(getenv); err != nil {
		errs = append(errs, err)
	}
	if cfg.MailAPIURL = getenv("MAIL_API_URL"); cfg.MailAPIURL == "" {
		errs = append(errs, errors.New("MAIL_API_URL is required"))
	}
	cfg.RetryBudget = DefaultRetryBudget
	for _, d := range []struct {
		name string
		into *time.Duration
	}{{"RETRY_BUDGET", &cfg.RetryBudget}, {"RETRY_BACKOFF_CAP", &cfg.BackoffCap}, {"MAIL_PROBE_INTERVAL", &cfg.ProbeInterval}} {
		if v := getenv(d.name); v != "" {
			if *d.into, err = config.ParseDuration(v); err != nil || *d.into <= 0 {
				errs = append(errs, fmt.Errorf("%s: %q is not a positive duration", d.name, v))
			}
		}
	}
	cfg.ParkingURL = getenv("PARKING_QUEUE_URL")
	// The mail that keeps probing comes back after the probe interval,
	// capped by the backoff cap: a shorter cap would bring it back before
	// the probe is due, to be parked with the rest, and nothing would probe.
	if interval, capped := cmp.Or(cfg.ProbeInterval, notifier.DefaultProbeInterval), cmp.Or(cfg.BackoffCap, sqsconsumer.DefaultBackoffCap); cfg.ParkingURL != "" && interval > capped {
		errs = append(errs, fmt.Errorf("MAIL_PROBE_INTERVAL: %s is longer than RETRY_BACKOFF_CAP (%s), which PARKING_QUEUE_URL does not allow", interval, capped))
	}
	if cfg.BackoffCap > 15*time.Minute {
		errs = append(errs, fmt.Errorf("RETRY_BACKOFF_CAP: %s is longer than SQS's longest delay, 15m", cfg.BackoffCap))
	}
	if v := getenv("MAIL_TIMEOUT"); v != "" {
		if cfg.MailTimeout, err = config.ParseDuration(v); err != nil || cfg.MailTimeout <= 0 {
			errs = append(errs, fmt.Errorf("MAIL_TIMEOUT: %q is not a positive duration", v))
		}
	}
	if cfg.LogLevel, err = obs.ParseLevel(getenv("AWS_LAMBDA_LOG_LEVEL")); err != nil {
		errs = append(errs, fmt.Errorf("AWS_LAMBDA_LOG_LEVEL: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("notifier: %w", err)
	}
	return cfg, nil
}
