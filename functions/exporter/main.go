// Command exporter builds the files of export operations (docs/principles.md §5, the bulk
// work class). Its event source is the exports queue, which the relay fills
// with export.requested jobs: for each it marks the operation running,
// writes the file its kind asks for (a class's roster, or a teacher's
// nightly report of their classes) as CSV to the exports bucket, and marks
// the operation succeeded with a presigned URL that expires — or failed,
// with a code and a reason. Package internal/exporter does the work; this program
// only wires it.
//
// Environment: the template's globals (CLUB_TABLE, OUTBOX_TABLE, …),
// QUEUE_URL, DLQ_URL, MAX_RECEIVE_COUNT (the queue's maxReceiveCount: the
// last failed receive fails the operation and dead-letters the job with its
// reason), EXPORTS_BUCKET, and optionally EXPORT_URL_EXPIRY (default 1h)
// and AWS_LAMBDA_LOG_LEVEL.
package main

import (
	"context"
	"fmt"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/clubdev/club/internal/exporter"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/sdkhttp"
)

// functionName labels log lines.
const functionName = "exporter"

func main() {
	cfg, cfgErr := exporter.LoadConfig(os.Getenv)
	logger := obs.NewLogger(os.Stdout, obs.Options{Level: cfg.LogLevel, Function: functionName})
	if cfgErr != nil {
		logger.Error("invalid configuration", obs.Err(cfgErr))
		os.Exit(1)
	}
	// The AWS SDK configuration is loaded here, once (AWS_ENDPOINT_URL
	// points it at an emulator), and handed to what builds the clients.
	awsCfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		logger.Error("start", obs.Err(fmt.Errorf("load AWS config: %w", err)))
		os.Exit(1)
	}
	sdkhttp.Mend(&awsCfg)
	h, err := exporter.Build(awsCfg, cfg, logger)
	if err != nil {
		logger.Error("start", obs.Err(err))
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}
