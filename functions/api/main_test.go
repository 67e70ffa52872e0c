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
	}
	cfg, err := loadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, "club", cfg.ClubTable)
	require.Equal(t, profile.PolicyAtEnrollment, cfg.AddressPolicy)
	require.Equal(t, slog.LevelDebug, cfg.LogLevel)

	_, err = loadConfig(func(k string) string {
		return map[string]string{"ADDRESS_POLICY": "never", "AWS_LAMBDA_LOG_LEVEL": "loud"}[k]
	})
	for _, want := range []string{"CLUB_TABLE", "OUTBOX_TABLE", "ADDRESS_POLICY", "AWS_LAMBDA_LOG_LEVEL"} {
		require.ErrorContains(t, err, want, "every problem at once")
	}
}

// TestBuild wires the real adapters (no AWS call is made to build them) and
// answers /healthz, which touches no storage.
func TestBuild(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	cfg, err := loadConfig(func(k string) string {
		return map[string]string{"CLUB_TABLE": "club", "OUTBOX_TABLE": "outbox"}[k]
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
}
