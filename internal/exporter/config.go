package exporter

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/clubdev/club/internal/config"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/store"
)

// The exporter's own environment variables, beside the template's globals
// and the queue's (sqsconsumer.ConfigFromEnv).
const (
	// EnvBucket is the exports bucket's name (required).
	EnvBucket = "EXPORTS_BUCKET"
	// EnvURLExpiry is how long a result URL works, e.g. "3600s" (optional,
	// default DefaultURLExpiry, at most MaxURLExpiry).
	EnvURLExpiry = "EXPORT_URL_EXPIRY"
)

// Config is the exporter function's configuration, read once at start.
type Config struct {
	config.Globals
	// Queue holds QUEUE_URL, DLQ_URL and MAX_RECEIVE_COUNT.
	Queue     sqsconsumer.Config
	Bucket    string
	URLExpiry time.Duration
	// LogLevel is AWS_LAMBDA_LOG_LEVEL, default INFO.
	LogLevel slog.Level
}

// LoadConfig reads the environment through getenv and reports every problem
// at once.
func LoadConfig(getenv func(string) string) (Config, error) {
	cfg := Config{URLExpiry: DefaultURLExpiry}
	var errs []error
	var err error
	if cfg.Globals, err = config.LoadGlobals(getenv); err != nil {
		errs = append(errs, err)
	}
	if cfg.Queue, err = sqsconsumer.ConfigFromEnv(getenv); err != nil {
		errs = append(errs, err)
	}
	if cfg.Bucket = getenv(EnvBucket); cfg.Bucket == "" {
		errs = append(errs, fmt.Errorf("%s is required", EnvBucket))
	}
	if v := getenv(EnvURLExpiry); v != "" {
		d, err := config.ParseDuration(v)
		if err != nil || d < time.Second || d > MaxURLExpiry {
			errs = append(errs, fmt.Errorf("%s: %q is not a duration between 1s and %s", EnvURLExpiry, v, MaxURLExpiry))
		}
		cfg.URLExpiry = d
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
// emulator): the store, the exports bucket and the queue consumer.
//
// With a custom endpoint the S3 client addresses buckets path-style
// (<endpoint>/<bucket>/<key>): a virtual host <bucket>.127.0.0.1 does not
// resolve, and the presigned URL must reach the endpoint from the caller's
// side too. On AWS the default virtual-hosted style is kept.
func Build(awsCfg aws.Config, cfg Config, logger *slog.Logger) (*Handler, error) {
	db := dynamodb.NewFromConfig(awsCfg)
	st, err := store.New(db, cfg.Store())
	if err != nil {
		return nil, err
	}
	s3c := s3.NewFromConfig(awsCfg, func(o *s3.Options) { o.UsePathStyle = awsCfg.BaseEndpoint != nil })
	bucket, err := NewBucket(s3c, cfg.Bucket)
	if err != nil {
		return nil, err
	}
	e, err := New(Deps{
		Operations: st.Operations, Classes: st.Classes, Rosters: st.Projections, Teachers: st.Projections, Files: bucket,
		URLExpiry: cfg.URLExpiry, Logger: logger, Metrics: os.Stdout,
	})
	if err != nil {
		return nil, err
	}
	return NewHandler(cfg.Queue, sqs.NewFromConfig(awsCfg), e, logger)
}
