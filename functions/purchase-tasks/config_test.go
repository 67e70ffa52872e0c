package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func getenv(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	base := map[string]string{"CLUB_TABLE": "club", "OUTBOX_TABLE": "outbox", "PAYMENT_API_URL": "http://127.0.0.1:4581"}
	cfg, err := loadConfig(getenv(base))
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:4581", cfg.Payment.BaseURL)
	require.Zero(t, cfg.Payment.Timeout, "the client's default")

	base["PAYMENT_TIMEOUT"] = "5s"
	cfg, err = loadConfig(getenv(base))
	require.NoError(t, err)
	require.Equal(t, 5*time.Second, cfg.Payment.Timeout)

	_, err = loadConfig(getenv(map[string]string{"PAYMENT_TIMEOUT": "2m", "AWS_LAMBDA_LOG_LEVEL": "loud"}))
	require.Error(t, err)
	for _, want := range []string{"CLUB_TABLE", "OUTBOX_TABLE", "PAYMENT_API_URL", "PAYMENT_TIMEOUT", "AWS_LAMBDA_LOG_LEVEL"} {
		require.ErrorContains(t, err, want, "every problem is reported at once")
	}
}
