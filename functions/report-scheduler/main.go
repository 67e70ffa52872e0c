// Command report-scheduler asks, every night, for each teacher's report (the
// bulk work class's second job, beside roster exports). The template's
// EventBridge schedule fires it; for every teacher who has a class it
// writes a teacher_report operation and its job through the outbox, once
// per teacher and day, and the exporter builds the file. Package
// internal/reports does the work; this program only wires it.
//
// Environment: the template's globals (CLUB_TABLE, OUTBOX_TABLE, …) and
// optionally AWS_LAMBDA_LOG_LEVEL.
package main

import (
	"context"
	"fmt"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/reports"
	"github.com/clubdev/club/internal/sdkhttp"
)

// functionName labels log lines.
const functionName = "report-scheduler"

func main() {
	cfg, cfgErr := reports.LoadConfig(os.Getenv)
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
	h, err := reports.Build(awsCfg, cfg, logger)
	if err != nil {
		logger.Error("start", obs.Err(err))
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}
