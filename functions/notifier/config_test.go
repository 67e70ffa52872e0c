package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club/profile"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"CLUB_TABLE": "club", "OUTBOX_TABLE": "outbox", "INBOX_RETENTION": "7d", "OUTBOX_RETENTION": "7d",
		"ADDRESS_POLICY": "at_enrollment", "QUEUE_URL": "q", "DLQ_URL": "d", "MAIL_API_URL": "http://127.0.0.1:4580",
		"MAX_RECEIVE_COUNT": "8", "MAIL_TIMEOUT": "5s", "RETRY_BACKOFF_CAP": "2s", "MAIL_PROBE_INTERVAL": "1s",
	}
	cfg, err := loadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, profile.PolicyAtEnrollment, cfg.AddressPolicy)
	require.Equal(t, "q", cfg.Queue.QueueURL)
	require.Equal(t, "d", cfg.Queue.DLQURL)
	require.Equal(t, 8, cfg.Queue.MaxReceiveCount)
	require.Equal(t, "http://127.0.0.1:4580", cfg.MailAPIURL)
	require.Equal(t, 5*time.Second, cfg.MailTimeout)
	require.Equal(t, DefaultRetryBudget, cfg.RetryBudget, "24 h unless RETRY_BUDGET says otherwise")
	require.Equal(t, 2*time.Second, cfg.BackoffCap)
	require.Equal(t, time.Second, cfg.ProbeInterval)
	env["RETRY_BUDGET"] = "86400s"
	cfg, err = loadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, 24*time.Hour, cfg.RetryBudget)
	require.Empty(t, cfg.ParkingURL, "optional")

	env["PARKING_QUEUE_URL"] = "p"
	cfg, err = loadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, "p", cfg.ParkingURL)
	env["MAIL_PROBE_INTERVAL"] = "3s"
	_, err = loadConfig(func(k string) string { return env[k] })
	require.ErrorContains(t, err, "MAIL_PROBE_INTERVAL: 3s is longer than RETRY_BACKOFF_CAP (2s)", "the probing mail would come back before its probe and be parked")

	_, err = loadConfig(func(k string) string {
		return map[string]string{"MAIL_TIMEOUT": "soon", "RETRY_BUDGET": "0s", "RETRY_BACKOFF_CAP": "1h"}[k]
	})
	for _, want := range []string{"CLUB_TABLE", "QUEUE_URL", "DLQ_URL", "MAIL_API_URL", "MAIL_TIMEOUT", "RETRY_BUDGET", "RETRY_BACKOFF_CAP"} {
		require.ErrorContains(t, err, want, "every problem is reported at once")
	}
}
