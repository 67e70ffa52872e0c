package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/clubdev/club/internal/mail"
	"github.com/clubdev/club/internal/notifier"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/sdkhttp"
	"github.com/clubdev/club/internal/store"
)

func main() {
	cfg, cfgErr := loadConfig(os.Getenv)
	logger := obs.NewLogger(os.Stdout, obs.Options{Level: cfg.LogLevel, Function: notifier.FunctionName})
	if cfgErr != nil {
		logger.Error("invalid configuration", obs.Err(cfgErr))
		os.Exit(1)
	}
	h, err := build(context.Background(), cfg, logger)
	if err != nil {
		logger.Error("start", obs.Err(err))
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}

func build(ctx context.Context, cfg Config, logger *slog.Logger) (*notifier.Handler, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	sdkhttp.Mend(&awsCfg)
	st, err := store.New(dynamodb.NewFromConfig(awsCfg), cfg.Store())
	if err != nil {
		return nil, err
	}
	mailer, err := mail.New(mail.Config{BaseURL: cfg.MailAPIURL, Timeout: cfg.MailTimeout})
	if err != nil {
		return nil, err
	}
	timeout := cfg.MailTimeout
	if timeout == 0 {
		timeout = mail.DefaultTimeout
	}
	breaker := &notifier.Breaker{Next: mailer, ProbeInterval: cfg.ProbeInterval}
	n, err := notifier.NewNotifier(notifier.NotifierDeps{
		Store:     st.Enrollments,
		Addresses: notifier.Addresses{Policy: cfg.AddressPolicy, Profiles: st.Profiles},
		// Throttled sends wait inside the invocation (see PatientMailer),
		// leaving time for one more send and for recording its outcome; a
		// provider that is down is probed, not hammered (see Breaker), and
		// the mail it refuses waits in the parking queue (see Handler).
		Mailer: &notifier.PatientMailer{
			Next:   breaker,
			Margin: timeout + 2*time.Second,
		},
		Breaker: breaker,
		Logger:  logger,
		Metrics: os.Stdout,
	})
	if err != nil {
		return nil, err
	}
	queue := cfg.Queue
	queue.RetryBudget, queue.BackoffCap, queue.ParkingURL = cfg.RetryBudget, cfg.BackoffCap, cfg.ParkingURL
	return notifier.NewHandler(queue, sqs.NewFromConfig(awsCfg), n, logger)
}
