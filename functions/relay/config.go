package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/clubdev/club/internal/config"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/relay"
)

// Config is the relay's configuration, read once at start.
type Config struct {
	config.Globals
	// Routing is EVENTS_TOPIC_ARN, PURCHASE_STATE_MACHINE_ARN,
	// EXPORTS_QUEUE_URL and the optional SNS_PUBLISH_BATCH.
	relay.Routing
	// LogLevel is AWS_LAMBDA_LOG_LEVEL (set by Lambda's logging config),
	// default INFO.
	LogLevel slog.Level
}

// loadConfig reads the environment through getenv and reports every problem
// at once.
func loadConfig(getenv func(string) string) (Config, error) {
	var cfg Config
	var errs []error
	g, err := config.LoadGlobals(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.Globals = g
	if cfg.Routing, err = relay.RoutingFromEnv(getenv); err != nil {
		errs = append(errs, err)
	}
	if cfg.LogLevel, err = obs.ParseLevel(getenv("AWS_LAMBDA_LOG_LEVEL")); err != nil {
		errs = append(errs, fmt.Errorf("AWS_LAMBDA_LOG_LEVEL: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("relay: %w", err)
	}
	return cfg, nil
}
