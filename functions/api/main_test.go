package main

import (
	"context"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club/profile"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"CLUB_TABLE": "club", "OUTBOX_TABLE": "outbox", "ADDRESS_POLICY": "at_enrollment",
		"INBOX_RETENTION": "7d", "OUTBOX_RETENTION": "7d", "AWS_LAMBDA_LOG_LEVEL": "debug",
		"PAYMENT_WEBHOOK_SECRET":     "whsec-1",
		"PURCHASE_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:000000000000:stateMachine:club-purchase",
	}
	cfg, err := loadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, "club", cfg.ClubTable)
	require.Equal(t, profile.PolicyAtEnrollment, cfg.AddressPolicy)
	require.Equal(t, slog.LevelDebug, cfg.LogLevel)
	require.Equal(t, []byte("whsec-1"), cfg.PaymentWebhookSecret)
	require.Equal(t, "arn:aws:states:us-east-1:000000000000:stateMachine:club-purchase", cfg.PurchaseStateMachineARN)

	_, err = loadConfig(func(k string) string {
		return map[string]string{"ADDRESS_POLICY": "never", "AWS_LAMBDA_LOG_LEVEL": "loud"}[k]
	})
	for _, want := range []string{"CLUB_TABLE", "OUTBOX_TABLE", "ADDRESS_POLICY", "AWS_LAMBDA_LOG_LEVEL",
		"PAYMENT_WEBHOOK_SECRET is required", "PURCHASE_STATE_MACHINE_ARN is required"} {
		require.ErrorContains(t, err, want, "every problem at once")
	}
}

// TestBuild wires the real adapters (no AWS call is made to build them) and
// answers /healthz and a forged webhook, which touch no storage.
func TestBuild(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	cfg, err := loadConfig(func(k string) string {
		return map[string]string{
			"CLUB_TABLE": "club", "OUTBOX_TABLE": "outbox", "PAYMENT_WEBHOOK_SECRET": "whsec-1",
			"PURCHASE_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:000000000000:stateMachine:club-purchase",
		}[k]
	})
	require.NoError(t, err)
	h, err := build(context.Background(), cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	resp, err := h.Handle(context.Background(), events.APIGatewayV2HTTPRequest{
		RawPath:        "/healthz",
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"}},
	})
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)

	// The webhook route is wired to the configured secret: an unsigned
	// event is refused before anything is read.
	resp, err = h.Handle(context.Background(), events.APIGatewayV2HTTPRequest{
		RawPath: "/webhooks/payments", Body: `{"event_id":"evt-1","type":"payment.succeeded","payment_id":"pay-1","reference":"p-1"}`,
		Headers:        map[string]string{"x-sandbox-signature": "t=1,v1=00"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"}},
	})
	require.NoError(t, err)
	require.Equal(t, 401, resp.StatusCode)
	require.Contains(t, resp.Body, `"code":"invalid_signature"`)
}
