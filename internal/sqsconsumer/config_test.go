package sqsconsumer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/sqsconsumer/sqsconsumertest"
)

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	valid := sqsconsumer.Config{Name: "n", QueueURL: "q", DLQURL: "d"}
	tests := []struct {
		name   string
		change func(*sqsconsumer.Config)
	}{
		{"no name", func(c *sqsconsumer.Config) { c.Name = "" }},
		{"no queue", func(c *sqsconsumer.Config) { c.QueueURL = "" }},
		{"no DLQ", func(c *sqsconsumer.Config) { c.DLQURL = "" }},
		{"DLQ is the queue", func(c *sqsconsumer.Config) { c.DLQURL = c.QueueURL }},
		{"negative concurrency", func(c *sqsconsumer.Config) { c.Concurrency = -1 }},
		{"cap below base", func(c *sqsconsumer.Config) { c.BackoffBase, c.BackoffCap = 10*time.Second, time.Second }},
		{"sub-second visibility", func(c *sqsconsumer.Config) { c.VisibilityTimeout = time.Second }},
		{"cap over SQS's longest delay", func(c *sqsconsumer.Config) { c.RetryBudget, c.BackoffCap = time.Hour, 16*time.Minute }},
		{"cap filled in from a base over SQS's longest delay", func(c *sqsconsumer.Config) { c.RetryBudget, c.BackoffBase = time.Hour, 20*time.Minute }},
	}
	_, err := sqsconsumer.New(valid, &sqsconsumertest.SQS{}, nil)
	require.NoError(t, err)
	_, err = sqsconsumer.New(valid, nil, nil)
	require.Error(t, err, "nil client")
	for _, tt := range tests {
		cfg := valid
		tt.change(&cfg)
		_, err := sqsconsumer.New(cfg, &sqsconsumertest.SQS{}, nil)
		require.Error(t, err, tt.name)
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	cfg, err := sqsconsumer.ConfigFromEnv(env(map[string]string{"QUEUE_URL": "q", "DLQ_URL": "d", "MAX_RECEIVE_COUNT": "8"}))
	require.NoError(t, err)
	require.Equal(t, sqsconsumer.Config{QueueURL: "q", DLQURL: "d", MaxReceiveCount: 8}, cfg)

	cfg, err = sqsconsumer.ConfigFromEnv(env(map[string]string{"QUEUE_URL": "q", "DLQ_URL": "d"}))
	require.NoError(t, err)
	require.Zero(t, cfg.MaxReceiveCount, "optional")

	_, err = sqsconsumer.ConfigFromEnv(env(map[string]string{"MAX_RECEIVE_COUNT": "zero"}))
	require.ErrorContains(t, err, "QUEUE_URL is required")
	require.ErrorContains(t, err, "DLQ_URL is required")
	require.ErrorContains(t, err, "MAX_RECEIVE_COUNT")
}
