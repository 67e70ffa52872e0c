// Command relay is the outbox relay (docs/principles.md §1.14, §2). Its event source is the
// outbox table's stream (INSERT records only): for each new outbox row, in
// stream order, it publishes the envelope to the events topic with message
// attributes "type" and "event_id" (a workflow row, purchase.requested,
// starts the purchase saga's execution named after the purchase instead; a
// job row, export.requested, goes to the exports queue), then marks the row
// published. A record it cannot relay is reported as the batch's first
// failure and the stream retries from it; the outbox sweeper catches
// whatever the stream gives up on.
//
// Environment: the template's globals (CLUB_TABLE, OUTBOX_TABLE,
// OUTBOX_RETENTION, …), EVENTS_TOPIC_ARN, PURCHASE_STATE_MACHINE_ARN,
// EXPORTS_QUEUE_URL, and optionally SNS_PUBLISH_BATCH (true to publish with
// PublishBatch, 10 messages a call).
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
const functionName = "relay"

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
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	sdkhttp.Mend(&awsCfg)
	w, err := relay.Wire(awsCfg, functionName, cfg.Store(), cfg.Routing, logger, os.Stdout)
	if err != nil {
		return nil, err
	}
	return &Handler{relay: w.Relay, logger: logger}, nil
}
