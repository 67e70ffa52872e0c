package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/clubdev/club/internal/config"
	"github.com/clubdev/club/internal/obs"
)

// Config is the relay's configuration, read once at start.
type Config struct {
	config.Globals
	// TopicARN is the events topic (EVENTS_TOPIC_ARN).
	TopicARN string
	// PurchaseStateMachineARN is the purchase saga's state machine
	// (PURCHASE_STATE_MACHINE_ARN): purchase.requested starts an execution
	// of it.
	PurchaseStateMachineARN string
	// PublishBatch turns on SNS PublishBatch (SNS_PUBLISH_BATCH, default
	// false; the template turns it on).
	PublishBatch bool
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
	if cfg.TopicARN = getenv("EVENTS_TOPIC_ARN"); cfg.TopicARN == "" {
		errs = append(errs, errors.New("EVENTS_TOPIC_ARN is required"))
	}
	if cfg.PurchaseStateMachineARN = getenv("PURCHASE_STATE_MACHINE_ARN"); cfg.PurchaseStateMachineARN == "" {
		errs = append(errs, errors.New("PURCHASE_STATE_MACHINE_ARN is required"))
	}
	if v := getenv("SNS_PUBLISH_BATCH"); v != "" {
		if cfg.PublishBatch, err = strconv.ParseBool(v); err != nil {
			errs = append(errs, fmt.Errorf("SNS_PUBLISH_BATCH: %q is not a boolean", v))
		}
	}
	if cfg.LogLevel, err = obs.ParseLevel(getenv("AWS_LAMBDA_LOG_LEVEL")); err != nil {
		errs = append(errs, fmt.Errorf("AWS_LAMBDA_LOG_LEVEL: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("relay: %w", err)
	}
	return cfg, nil
}
