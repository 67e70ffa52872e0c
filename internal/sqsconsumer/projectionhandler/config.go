package projectionhandler

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/clubdev/club/internal/config"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/sqsconsumer"
)

// Config is a projection function's configuration, read once at start.
type Config struct {
	config.Globals
	// Queue holds QUEUE_URL, DLQ_URL and the optional MAX_RECEIVE_COUNT;
	// its Name is the function's name.
	Queue sqsconsumer.Config
	// LogLevel is AWS_LAMBDA_LOG_LEVEL, default INFO.
	LogLevel slog.Level
}

// LoadConfig reads the configuration of the function named function (which
// labels its log lines, metrics and errors) through getenv and reports every
// problem at once.
func LoadConfig(function string, getenv func(string) string) (Config, error) {
	var cfg Config
	var errs []error
	var err error
	if cfg.Globals, err = config.LoadGlobals(getenv); err != nil {
		errs = append(errs, err)
	}
	if cfg.Queue, err = sqsconsumer.ConfigFromEnv(getenv); err != nil {
		errs = append(errs, err)
	}
	cfg.Queue.Name = function
	if cfg.LogLevel, err = obs.ParseLevel(getenv("AWS_LAMBDA_LOG_LEVEL")); err != nil {
		errs = append(errs, fmt.Errorf("AWS_LAMBDA_LOG_LEVEL: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("%s: %w", function, err)
	}
	return cfg, nil
}
