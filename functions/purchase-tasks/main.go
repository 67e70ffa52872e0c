// Command purchase-tasks runs the task steps of the purchase saga
// (statemachines/purchase.asl.json, docs/principles.md §6). Every Task state of the state
// machine invokes this one function with {"step": <name>, "purchase_id":
// <id>, ...}; the handler runs the step (package purchase, Steps) and
// returns its result, or an error whose Go type name (PaymentUnknown,
// HoldExpired, GrantFailed, ...) is the error type the state machine's Retry
// and Catch match.
//
// Environment: the template's globals (CLUB_TABLE, OUTBOX_TABLE, ...),
// PAYMENT_API_URL, optionally PAYMENT_TIMEOUT (e.g. "5s"). The function
// calls states:SendTaskSuccess/SendTaskFailure for its own wait task when
// the payment webhook arrived before the task token was stored.
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

	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/payment"
	"github.com/clubdev/club/internal/sdkhttp"
	"github.com/clubdev/club/internal/sfnclient"
	"github.com/clubdev/club/internal/store"
)

// functionName labels log lines.
const functionName = "purchase-tasks"

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
	adapters, err := store.NewPurchaseAdapters(dynamodb.NewFromConfig(awsCfg), cfg.Store())
	if err != nil {
		return nil, err
	}
	provider, err := payment.New(cfg.Payment)
	if err != nil {
		return nil, err
	}
	callbacks, err := sfnclient.New(sfn.NewFromConfig(awsCfg), "")
	if err != nil {
		return nil, err
	}
	steps, err := purchase.NewSteps(purchase.StepsDeps{Store: adapters.Purchases, Payments: provider, Callbacks: callbacks})
	if err != nil {
		return nil, err
	}
	return NewHandler(steps, logger), nil
}
