package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/clubdev/club/internal/config"
	"github.com/clubdev/club/internal/obs"
)

// Config is the API's configuration, read once at start.
type Config struct {
	config.Globals
	// PaymentWebhookSecretParameter names the SSM SecureString parameter
	// holding the payment provider's shared HMAC key
	// (PAYMENT_WEBHOOK_SECRET_PARAMETER, required). The key is read from SSM
	// at start (webhooksecret.go), never from the environment: webhooks
	// signed with anything else are refused.
	PaymentWebhookSecretParameter string
	// PurchaseStateMachineARN is the purchase saga
	// (PURCHASE_STATE_MACHINE_ARN, required): the webhook completes its
	// waits (a late payment's refund starts from its outbox row).
	PurchaseStateMachineARN string
	// UserPoolID is the stack's Cognito user pool (USER_POOL_ID, optional:
	// empty when the stack trusts another issuer). A student's first
	// profile takes the address from it when the token has none (an
	// access token).
	UserPoolID string
	// LogLevel is AWS_LAMBDA_LOG_LEVEL (set by Lambda's logging config),
	// default INFO.
	LogLevel slog.Level
}

// loadConfig reads the environment through getenv and reports every problem
// at once.
func loadConfig(getenv func(string) string) (Config, error) {
	var cfg Config
	var errs []error
	var err error
	if cfg.Globals, err = config.LoadGlobals(getenv); err != nil {
		errs = append(errs, err)
	}
	if cfg.PaymentWebhookSecretParameter = getenv("PAYMENT_WEBHOOK_SECRET_PARAMETER"); cfg.PaymentWebhookSecretParameter == "" {
		errs = append(errs, errors.New("PAYMENT_WEBHOOK_SECRET_PARAMETER is required (the name of the webhook secret's SSM parameter)"))
	}
	if cfg.PurchaseStateMachineARN = getenv("PURCHASE_STATE_MACHINE_ARN"); cfg.PurchaseStateMachineARN == "" {
		errs = append(errs, errors.New("PURCHASE_STATE_MACHINE_ARN is required"))
	}
	cfg.UserPoolID = getenv("USER_POOL_ID")
	if cfg.LogLevel, err = obs.ParseLevel(getenv("AWS_LAMBDA_LOG_LEVEL")); err != nil {
		errs = append(errs, fmt.Errorf("AWS_LAMBDA_LOG_LEVEL: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("api: %w", err)
	}
	return cfg, nil
}
