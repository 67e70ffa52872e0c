package reports

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/clubdev/club/internal/club/operation"
	"github.com/clubdev/club/internal/config"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/store"
)

// Config is the report scheduler's configuration, read once at start.
type Config struct {
	config.Globals
	// LogLevel is AWS_LAMBDA_LOG_LEVEL, default INFO.
	LogLevel slog.Level
}

// LoadConfig reads the environment through getenv and reports every problem
// at once.
func LoadConfig(getenv func(string) string) (Config, error) {
	var cfg Config
	var errs []error
	var err error
	if cfg.Globals, err = config.LoadGlobals(getenv); err != nil {
		errs = append(errs, err)
	}
	if cfg.LogLevel, err = obs.ParseLevel(getenv("AWS_LAMBDA_LOG_LEVEL")); err != nil {
		errs = append(errs, fmt.Errorf("AWS_LAMBDA_LOG_LEVEL: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("%s: %w", functionName, err)
	}
	return cfg, nil
}

// Build wires the handler as the function's main does, over the AWS SDK
// configuration the main loaded (AWS_ENDPOINT_URL points it at an
// emulator): the store and the operation service.
func Build(awsCfg aws.Config, cfg Config, logger *slog.Logger) (*Handler, error) {
	db := dynamodb.NewFromConfig(awsCfg)
	st, err := store.New(db, cfg.Store())
	if err != nil {
		return nil, err
	}
	svc, err := operation.NewService(operation.Deps{Store: st.Operations})
	if err != nil {
		return nil, err
	}
	s, err := New(Deps{Teachers: st.Classes, Requester: svc, Logger: logger, Metrics: os.Stdout})
	if err != nil {
		return nil, err
	}
	return NewHandler(s)
}
