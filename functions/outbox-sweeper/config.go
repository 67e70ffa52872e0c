package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/clubdev/club/internal/config"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/relay"
)

// Config is the sweeper's configuration, read once at start.
type Config struct {
	config.Globals
	// Routing is EVENTS_TOPIC_ARN, PURCHASE_STATE_MACHINE_ARN,
	// EXPORTS_QUEUE_URL and the optional SNS_PUBLISH_BATCH, as for the
	// stream relay.
	relay.Routing
	// SweepAfter is how long a row may stay pending before it is
	// republished (SWEEP_AFTER, e.g. "60s"; required).
	SweepAfter time.Duration
	// Limit bounds the rows republished per run (SWEEP_LIMIT, default
	// relay.DefaultSweepLimit).
	Limit int
	// LeaseTTL is the sweeper lease's duration (SWEEP_LEASE_TTL, default
	// relay.DefaultLeaseTTL); keep it below the schedule period.
	LeaseTTL time.Duration
	// LogLevel is AWS_LAMBDA_LOG_LEVEL, default INFO.
	LogLevel slog.Level
}

// loadConfig reads the environment through getenv and reports every problem
// at once.
func loadConfig(getenv func(string) string) (Config, error) {
	cfg := Config{Limit: relay.DefaultSweepLimit, LeaseTTL: relay.DefaultLeaseTTL}
	var errs []error
	g, err := config.LoadGlobals(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.Globals = g
	if cfg.Routing, err = relay.RoutingFromEnv(getenv); err != nil {
		errs = append(errs, err)
	}
	if cfg.SweepAfter, err = positiveDuration(getenv, "SWEEP_AFTER", true); err != nil {
		errs = append(errs, err)
	}
	if v := getenv("SWEEP_LIMIT"); v != "" {
		if cfg.Limit, err = strconv.Atoi(v); err != nil || cfg.Limit <= 0 {
			errs = append(errs, fmt.Errorf("SWEEP_LIMIT: %q is not a positive number", v))
		}
	}
	if d, err := positiveDuration(getenv, "SWEEP_LEASE_TTL", false); err != nil {
		errs = append(errs, err)
	} else if d > 0 {
		cfg.LeaseTTL = d
	}
	if cfg.LogLevel, err = obs.ParseLevel(getenv("AWS_LAMBDA_LOG_LEVEL")); err != nil {
		errs = append(errs, fmt.Errorf("AWS_LAMBDA_LOG_LEVEL: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("outbox-sweeper: %w", err)
	}
	return cfg, nil
}

func positiveDuration(getenv func(string) string, name string, required bool) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		if required {
			return 0, fmt.Errorf("%s is required", name)
		}
		return 0, nil
	}
	d, err := config.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s: %q must be positive", name, v)
	}
	return d, nil
}
