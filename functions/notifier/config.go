package main

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/clubdev/club/internal/config"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/sqsconsumer"
)

// Config is the notifier's configuration, read once at start.
type Config struct {
	config.Globals
	// Queue holds QUEUE_URL, DLQ_URL and the optional MAX_RECEIVE_COUNT.
	Queue sqsconsumer.Config
	// MailAPIURL is the mail provider's base URL (MAIL_API_URL).
	MailAPIURL string
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
