// Command api is the Club backend's HTTP API (docs/principles.md §5) behind API Gateway's
// HTTP API and its JWT authorizer: classes, enrollments (idempotent create,
// get, cancel), the teacher's roster and counters, the caller's profile,
// paid intensives and their purchases, the payment provider's webhook,
// roster exports and their operations, and /healthz. Package internal/api
// does the work; this program only wires it to DynamoDB and Step Functions.
// An enrollment is answered right after its transaction commits; the
// confirmation e-mail follows through the outbox. An export is answered with
// its operation, pending; the exporter follows through the outbox. A
// purchase is answered once its seat is held; the saga follows through the
// outbox, and the webhook hands the provider's news to it.
//
// Environment: the template's globals (CLUB_TABLE, OUTBOX_TABLE,
// ADDRESS_POLICY, …), PAYMENT_WEBHOOK_SECRET_PARAMETER (the webhook secret
// is read from that SSM parameter at start; while it cannot be read, /healthz
// and the webhook answer 503 webhook_secret_unavailable naming the parameter
// and every other route works), PURCHASE_STATE_MACHINE_ARN and, optionally,
// USER_POOL_ID (the address of a first profile when the token has none) and
// AWS_LAMBDA_LOG_LEVEL.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/clubdev/club/internal/api"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/operation"
	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/sdkhttp"
	"github.com/clubdev/club/internal/sfnclient"
	"github.com/clubdev/club/internal/store"
	"github.com/clubdev/club/internal/userpool"
	"github.com/clubdev/club/internal/webhooksecret"
)

// functionName labels log lines.
const functionName = "api"

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

// build loads the AWS configuration once (AWS_ENDPOINT_URL points it at an
// emulator) and assembles the handler over the DynamoDB store and the
// purchase state machine.
func build(ctx context.Context, cfg Config, logger *slog.Logger) (*api.Handler, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	sdkhttp.Mend(&awsCfg)
	db := dynamodb.NewFromConfig(awsCfg)
	st, err := store.New(db, cfg.Store())
	if err != nil {
		return nil, err
	}
	pst, err := store.NewPurchaseAdapters(db, cfg.Store())
	if err != nil {
		return nil, err
	}
	purchases, err := purchase.NewService(purchase.Deps{
		Intensives: pst.Intensives, Store: pst.Purchases, Idempotency: st.Idempotency,
	})
	if err != nil {
		return nil, err
	}
	saga, err := sfnclient.New(sfn.NewFromConfig(awsCfg), cfg.PurchaseStateMachineARN)
	if err != nil {
		return nil, err
	}
	webhooks, err := webhooksecret.NewWebhooks(ctx, ssm.NewFromConfig(awsCfg), cfg.PaymentWebhookSecretParameter, purchase.WebhooksDeps{
		Store: pst.Purchases, Callbacks: saga,
	}, logger)
	if err != nil {
		return nil, err
	}
	deps := enrollment.Deps{
		Store: st.Enrollments, Classes: st.Classes, Idempotency: st.Idempotency,
		Policy: cfg.AddressPolicy, Profiles: st.Profiles,
		// A student's first enrollment creates a profile from the token's
		// e-mail, so that the notifier has an address to send to.
		SeedProfiles: st.Profiles,
	}
	if cfg.UserPoolID != "" {
		// ...or from the user pool's, when the token is an access token.
		if deps.Directory, err = userpool.NewDirectory(cognitoidentityprovider.NewFromConfig(awsCfg), cfg.UserPoolID, logger); err != nil {
			return nil, err
		}
	}
	enrollments, err := enrollment.NewService(deps)
	if err != nil {
		return nil, err
	}
	operations, err := operation.NewService(operation.Deps{Store: st.Operations})
	if err != nil {
		return nil, err
	}
	return api.New(api.Deps{
		Classes: st.Classes, Enrollments: enrollments, Projections: st.Projections, Profiles: st.Profiles,
		Purchases: purchases, Webhooks: webhooks, Operations: operations,
		Health: webhooks.Health, Logger: logger,
	})
}
