package main

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/clubdev/club/internal/config"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/payment"
)

// Config is the function's configuration, read once at start.
type Config struct {
	config.Globals
	// Payment is the provider's address (PAYMENT_API_URL) and the bound of
	// one call (PAYMENT_TIMEOUT, default payment.DefaultTimeout). Keep the
	// timeout well under the function's: a provider that never answers must
	// become a PaymentUnknown the state machine retries, not a Lambda
	// timeout.
	Payment payment.Config
	// LogLevel is AWS_LAMBDA_LOG_LEVEL, default INFO.
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
	cfg.Payment.BaseURL = getenv("PAYMENT_API_URL")
	if v := getenv("PAYMENT_TIMEOUT"); v != "" {
		d, err := config.ParseDuration(v)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("PAYMENT_TIMEOUT: %w", err))
		case d <= 0 || d > time.Minute:
			errs = append(errs, fmt.Errorf("PAYMENT_TIMEOUT: %q must be positive and at most 1m", v))
		default:
			cfg.Payment.Timeout = d
		}
	}
	if err := cfg.Payment.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("PAYMENT_API_URL: %w", err))
	}
	if cfg.LogLevel, err = obs.ParseLevel(getenv("AWS_LAMBDA_LOG_LEVEL")); err != nil {
		errs = append(errs, fmt.Errorf("AWS_LAMBDA_LOG_LEVEL: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("purchase-tasks: %w", err)
	}
	return cfg, nil
}
