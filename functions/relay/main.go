// Command relay is the outbox relay (SPEC §1.14, §2). Its event source is the
// outbox table's stream (INSERT records only): for each new outbox row, in
// stream order, it publishes the envelope to the events topic with message
// attributes "type" and "event_id" (a workflow row, purchase.requested,
// starts the purchase saga's execution named after the purchase instead),
// then marks the row published. A record it cannot relay is reported as the
// batch's first failure and the stream retries from it; the outbox sweeper
// catches whatever the stream gives up on.
//
// Environment: the template's globals (CLUB_TABLE, OUTBOX_TABLE,
// OUTBOX_RETENTION, …), EVENTS_TOPIC_ARN, PURCHASE_STATE_MACHINE_ARN, and
// optionally SNS_PUBLISH_BATCH (true to publish with PublishBatch, 10
// messages a call).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/relay"
	"github.com/clubdev/club/internal/sfnclient"
	"github.com/clubdev/club/internal/store"
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
	st, err := store.New(dynamodb.NewFromConfig(awsCfg), cfg.Store())
	if err != nil {
		return nil, err
	}
	topic, err := relay.NewSNSPublisher(sns.NewFromConfig(awsCfg), relay.SNSConfig{TopicARN: cfg.TopicARN, Batch: cfg.PublishBatch})
	if err != nil {
		return nil, err
	}
	purchases, err := sfnclient.New(sfn.NewFromConfig(awsCfg), cfg.PurchaseStateMachineARN)
	if err != nil {
		return nil, err
	}
	workflows, err := relay.NewWorkflowStarter(relay.Workflows{events.TypePurchaseRequested: purchases})
	if err != nil {
		return nil, err
	}
	r, err := relay.New(relay.Config{
		// Jobs get their route with the feature that produces them;
		// until then their rows fail with ErrNoRoute.
		Routes: relay.Routes{events.KindEvent: topic, events.KindWorkflow: workflows},
		Outbox: st.Outbox, Logger: logger, Metrics: os.Stdout,
		MetricDimensions: map[string]string{obs.DimFunction: functionName},
	})
	if err != nil {
		return nil, err
	}
	return &Handler{relay: r, logger: logger}, nil
}
