// Command outbox-sweeper runs every minute (docs/principles.md §1.14, §2). Under a lease,
// so that one sweeper works at a time, it republishes outbox rows still
// pending SWEEP_AFTER after they were written (the stream relay failed or gave
// up on them), with their original event_id, and marks them published; at
// most SWEEP_LIMIT rows per run, stopping before its lease expires. It never
// deletes a row, and it logs and reports (EMF) the age of the oldest pending
// row: a promise not kept yet.
//
// Rows are routed as the stream relay routes them: events to the topic,
// purchase.requested to the purchase saga (StartExecution named after the
// purchase, so a row the relay did publish starts nothing new), and
// refund.requested to its refund branch (named <purchase id>-refund).
//
// Environment: the template's globals (CLUB_TABLE, OUTBOX_TABLE,
// OUTBOX_RETENTION, …), EVENTS_TOPIC_ARN, PURCHASE_STATE_MACHINE_ARN,
// EXPORTS_QUEUE_URL, SWEEP_AFTER, and optionally SWEEP_LIMIT, SWEEP_LEASE_TTL and
// SNS_PUBLISH_BATCH.
package main

import (
	"context"
	"fmt"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/relay"
	"github.com/clubdev/club/internal/sdkhttp"
)

// functionName labels log lines and metrics.
const functionName = "outbox-sweeper"

func main() {
	cfg, cfgErr := loadConfig(os.Getenv)
	logger := obs.NewLogger(os.Stdout, obs.Options{Level: cfg.LogLevel, Function: functionName})
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

func build(ctx context.Context, cfg Config, logger *slog.Logger) (*Handler, error) {
	// The same store and routes as the stream relay (functions/relay).
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	sdkhttp.Mend(&awsCfg)
	w, err := relay.Wire(awsCfg, functionName, cfg.Store(), cfg.Routing, logger, os.Stdout)
	if err != nil {
		return nil, err
	}
	s, err := relay.NewSweeper(relay.SweeperConfig{
		Relay: w.Relay, Outbox: w.Store.Outbox, Leases: w.Store.Leases,
		SweepAfter: cfg.SweepAfter, Limit: cfg.Limit, LeaseTTL: cfg.LeaseTTL,
		Logger: logger, Metrics: os.Stdout, MetricDimensions: map[string]string{obs.DimFunction: functionName},
	})
	if err != nil {
		return nil, err
	}
	return newHandler(s), nil
}
