package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/relay"
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
		"SWEEP_AFTER":                "60s",
	}
	cfg, err := loadConfig(env(base))
	require.NoError(t, err)
	require.Equal(t, time.Minute, cfg.SweepAfter)
	require.Equal(t, "arn:aws:states:us-east-1:000000000000:stateMachine:club-purchase", cfg.PurchaseStateMachineARN)
	require.Equal(t, relay.DefaultSweepLimit, cfg.Limit)
	require.Equal(t, relay.DefaultLeaseTTL, cfg.LeaseTTL)
	require.False(t, cfg.PublishBatch)

	tuned := map[string]string{"SWEEP_LIMIT": "50", "SWEEP_LEASE_TTL": "20s", "SWEEP_AFTER": "1d"}
	for k, v := range base {
		if _, ok := tuned[k]; !ok {
			tuned[k] = v
		}
	}
	cfg, err = loadConfig(env(tuned))
	require.NoError(t, err)
	require.Equal(t, 50, cfg.Limit)
	require.Equal(t, 20*time.Second, cfg.LeaseTTL)
	require.Equal(t, 24*time.Hour, cfg.SweepAfter)

	_, err = loadConfig(env(map[string]string{"SWEEP_LIMIT": "-3", "SWEEP_LEASE_TTL": "0s", "SNS_PUBLISH_BATCH": "maybe"}))
	for _, want := range []string{"CLUB_TABLE is required", "EVENTS_TOPIC_ARN is required", "PURCHASE_STATE_MACHINE_ARN is required", "EXPORTS_QUEUE_URL is required", "SWEEP_AFTER is required", "SWEEP_LIMIT", "SWEEP_LEASE_TTL", "SNS_PUBLISH_BATCH"} {
		require.ErrorContains(t, err, want, "every problem at once")
	}
}
