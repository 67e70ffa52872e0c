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
		"MAX_RECEIVE_COUNT": "8", "MAIL_TIMEOUT": "5s",
	}
	cfg, err := loadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, profile.PolicyAtEnrollment, cfg.AddressPolicy)
	require.Equal(t, "q", cfg.Queue.QueueURL)
	require.Equal(t, "d", cfg.Queue.DLQURL)
	require.Equal(t, 8, cfg.Queue.MaxReceiveCount)
	require.Equal(t, "http://127.0.0.1:4580", cfg.MailAPIURL)
	require.Equal(t, 5*time.Second, cfg.MailTimeout)

	_, err = loadConfig(func(k string) string { return map[string]string{"MAIL_TIMEOUT": "soon"}[k] })
	for _, want := range []string{"CLUB_TABLE", "QUEUE_URL", "DLQ_URL", "MAIL_API_URL", "MAIL_TIMEOUT"} {
		require.ErrorContains(t, err, want, "every problem is reported at once")
	}
}
