package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/api"
	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/webhooksecret/webhooksecrettest"
	"github.com/clubdev/club/internal/webhooksig"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"CLUB_TABLE": "club", "OUTBOX_TABLE": "outbox", "ADDRESS_POLICY": "at_enrollment",
		"INBOX_RETENTION": "7d", "OUTBOX_RETENTION": "7d", "AWS_LAMBDA_LOG_LEVEL": "debug",
		"PAYMENT_WEBHOOK_SECRET_PARAMETER": "/club/payment-webhook-secret",
		"PURCHASE_STATE_MACHINE_ARN":       "arn:aws:states:us-east-1:000000000000:stateMachine:club-purchase",
	}
	cfg, err := loadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, "club", cfg.ClubTable)
	require.Equal(t, profile.PolicyAtEnrollment, cfg.AddressPolicy)
	require.Equal(t, slog.LevelDebug, cfg.LogLevel)
	require.Equal(t, "/club/payment-webhook-secret", cfg.PaymentWebhookSecretParameter)
	require.Equal(t, "arn:aws:states:us-east-1:000000000000:stateMachine:club-purchase", cfg.PurchaseStateMachineARN)

	_, err = loadConfig(func(k string) string {
		return map[string]string{"ADDRESS_POLICY": "never", "AWS_LAMBDA_LOG_LEVEL": "loud"}[k]
	})
	for _, want := range []string{"CLUB_TABLE", "OUTBOX_TABLE", "ADDRESS_POLICY", "AWS_LAMBDA_LOG_LEVEL",
		"PAYMENT_WEBHOOK_SECRET_PARAMETER is required", "PURCHASE_STATE_MACHINE_ARN is required"} {
		require.ErrorContains(t, err, want, "every problem at once")
	}
}

// minimalConfig is the configuration with only what is required, the
// webhook secret in the SSM parameter name.
func minimalConfig(t *testing.T, name string) Config {
	t.Helper()
	cfg, err := loadConfig(func(k string) string {
		return map[string]string{
			"CLUB_TABLE": "club", "OUTBOX_TABLE": "outbox", "PAYMENT_WEBHOOK_SECRET_PARAMETER": name,
			"PURCHASE_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:000000000000:stateMachine:club-purchase",
		}[k]
	})
	require.NoError(t, err)
	return cfg
}

// TestBuild wires the real adapters (no AWS call is made to build them but
// the read of the webhook secret from SSM) and answers /healthz and
// webhooks, which touch no storage until their signature holds.
func TestBuild(t *testing.T) {
	params := webhooksecrettest.StartSSM(t)
	const name = "/club-api-test/build/payment-webhook-secret"
	webhooksecrettest.PutSecret(t, params, name, "whsec-from-ssm")
	h, err := build(context.Background(), minimalConfig(t, name), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	resp, err := h.Handle(context.Background(), events.APIGatewayV2HTTPRequest{
		RawPath:        "/healthz",
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"}},
	})
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)

	webhook := func(signature, body string) events.APIGatewayV2HTTPResponse {
		resp, err := h.Handle(context.Background(), events.APIGatewayV2HTTPRequest{
			RawPath: "/webhooks/payments", Body: body,
			Headers:        map[string]string{"x-sandbox-signature": signature},
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"}},
		})
		require.NoError(t, err)
		return resp
	}
	// The webhook route is wired to the secret read from SSM: an unsigned
	// event is refused before anything is read...
	body := `{"event_id":"evt-1","type":"payment.succeeded","payment_id":"pay-1","reference":"p-1"}`
	resp = webhook("t=1,v1=00", body)
	require.Equal(t, 401, resp.StatusCode)
	require.Contains(t, resp.Body, `"code":"invalid_signature"`)
	// ...and one signed with that secret is authentic (this body is not an
	// event, which only an authentic body gets to be told).
	resp = webhook(webhooksig.Sign([]byte("whsec-from-ssm"), time.Now(), []byte(`{}`)), `{}`)
	require.Equal(t, 400, resp.StatusCode)
	require.Contains(t, resp.Body, `"code":"invalid_webhook"`)
}

// Without its webhook secret the API still starts: /healthz and the webhook
// answer 503 webhook_secret_unavailable naming the parameter to fix (never
// quoting a value), and the other routes answer as usual.
func TestBuildNamesTheMissingSecret(t *testing.T) {
	params := webhooksecrettest.StartSSM(t)
	_, err := params.PutParameter(context.Background(), &ssm.PutParameterInput{
		Name: aws.String("/club-api-test/plain"), Value: aws.String("plain-text-secret"), Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(true),
	})
	require.NoError(t, err)
	webhooksecrettest.PutSecret(t, params, "/club-api-test/blank", "  ")
	for name, want := range map[string]string{
		"/club-api-test/missing": "SSM parameter /club-api-test/missing does not exist",
		"/club-api-test/plain":   "SSM parameter /club-api-test/plain is a String: store the webhook secret as a SecureString",
		"/club-api-test/blank":   "SSM parameter /club-api-test/blank is empty",
	} {
		h, err := build(context.Background(), minimalConfig(t, name), slog.New(slog.DiscardHandler))
		require.NoError(t, err, name)
		call := func(method, path string) events.APIGatewayV2HTTPResponse {
			resp, err := h.Handle(context.Background(), events.APIGatewayV2HTTPRequest{
				RawPath: path, Body: "{}",
				RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method}},
			})
			require.NoError(t, err)
			return resp
		}
		for _, route := range [][2]string{{"GET", "/healthz"}, {"POST", "/webhooks/payments"}} {
			resp := call(route[0], route[1])
			require.Equal(t, 503, resp.StatusCode, "%s %s", route[0], route[1])
			var body struct {
				Error struct{ Code, Message string }
			}
			require.NoError(t, json.Unmarshal([]byte(resp.Body), &body))
			require.Equal(t, api.CodeWebhookSecretUnavailable, body.Error.Code)
			require.Contains(t, body.Error.Message, want)
			require.NotContains(t, resp.Body, "plain-text-secret")
			require.Equal(t, "60", resp.Headers["Retry-After"])
		}
		require.Equal(t, 404, call("GET", "/nowhere").StatusCode, "other routes answer as usual")
		require.Equal(t, 401, call("GET", "/classes/c-1").StatusCode, "other routes answer as usual")
	}
}
