package sqsconsumer

import (
	"errors"
	"fmt"
	"strconv"
)

// The environment variables of an SQS consumer function.
const (
	// EnvQueueURL is the source queue's URL (required).
	EnvQueueURL = "QUEUE_URL"
	// EnvDLQURL is the dead-letter queue's URL (required).
	EnvDLQURL = "DLQ_URL"
	// EnvMaxReceiveCount is the source queue's redrive maxReceiveCount
	// (optional; see Config.MaxReceiveCount).
	EnvMaxReceiveCount = "MAX_RECEIVE_COUNT"
)

// ConfigFromEnv reads the queue settings through getenv (os.Getenv in a
// function's main) and reports every missing or invalid value at once. The
// caller sets Name, Concurrency and anything else it needs.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	var cfg Config
	var errs []error
	if cfg.QueueURL = getenv(EnvQueueURL); cfg.QueueURL == "" {
		errs = append(errs, fmt.Errorf("%s is required", EnvQueueURL))
	}
	if cfg.DLQURL = getenv(EnvDLQURL); cfg.DLQURL == "" {
		errs = append(errs, fmt.Errorf("%s is required", EnvDLQURL))
	}
	if v := getenv(EnvMaxReceiveCount); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("%s: %q is not a positive integer", EnvMaxReceiveCount, v))
		}
		cfg.MaxReceiveCount = n
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	return cfg, nil
}
