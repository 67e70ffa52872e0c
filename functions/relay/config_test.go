package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"CLUB_TABLE": "club", "OUTBOX_TABLE": "outbox", "OUTBOX_RETENTION": "7d",
		"EVENTS_TOPIC_ARN":           "arn:aws:sns:us-east-1:000000000000:club-events",
		"PURCHASE_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:000000000000:stateMachine:club-purchase",
		"EXPORTS_QUEUE_URL":          "http://127.0.0.1:4566/000000000000/club-exports",
	}
	cfg, err := loadConfig(env(base))
	require.NoError(t, err)
	require.Equal(t, "arn:aws:sns:us-east-1:000000000000:club-events", cfg.TopicARN)
	require.Equal(t, "arn:aws:states:us-east-1:000000000000:stateMachine:club-purchase", cfg.PurchaseStateMachineARN)
	require.False(t, cfg.PublishBatch, "batching is off by default")
	require.Equal(t, 7*24*time.Hour, cfg.Store().OutboxRetention)
	require.Equal(t, slog.LevelInfo, cfg.LogLevel)

	on := map[string]string{"SNS_PUBLISH_BATCH": "true", "AWS_LAMBDA_LOG_LEVEL": "DEBUG"}
	for k, v := range base {
		on[k] = v
	}
	cfg, err = loadConfig(env(on))
	require.NoError(t, err)
	require.True(t, cfg.PublishBatch)
	require.Equal(t, slog.LevelDebug, cfg.LogLevel)

	_, err = loadConfig(env(map[string]string{"SNS_PUBLISH_BATCH": "sometimes", "AWS_LAMBDA_LOG_LEVEL": "loud"}))
	for _, want := range []string{"CLUB_TABLE is required", "EVENTS_TOPIC_ARN is required", "PURCHASE_STATE_MACHINE_ARN is required", "EXPORTS_QUEUE_URL is required", "SNS_PUBLISH_BATCH", "AWS_LAMBDA_LOG_LEVEL"} {
		require.ErrorContains(t, err, want, "every problem at once")
	}
}
