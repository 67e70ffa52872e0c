package notifier

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/mail"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/sqsconsumer"
)

// quotingProvider is a mail provider whose error answers quote the
// recipient, as real ones do ("... is on the suppression list"). status is
// what it answers every send with.
func quotingProvider(t *testing.T, status int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m mail.Message
		_ = json.NewDecoder(r.Body).Decode(&m)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{
			"code": "recipient_refused", "message": fmt.Sprintf("recipient %s is on the suppression list (reported by postmaster@%s)", m.To, "mx.example"),
		}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// useProvider rewires the fixture's notifier to send through baseURL.
func (f *fixture) useProvider(t *testing.T, baseURL string) {
	t.Helper()
	mailer, err := mail.New(mail.Config{BaseURL: baseURL, Timeout: 2 * time.Second})
	require.NoError(t, err)
	logger := obs.NewLogger(f.logs, obs.Options{Level: slog.LevelDebug, Function: FunctionName})
	n, err := NewNotifier(NotifierDeps{
		Store:     f.store.Enrollments,
		Addresses: profile.Resolver{Policy: profile.PolicyCurrent, Profiles: f.store.Profiles},
		Mailer:    mailer,
		Logger:    logger,
		Metrics:   f.metrics,
		Now:       func() time.Time { return enrolledAt.Add(latency) },
	})
	require.NoError(t, err)
	f.handler, err = NewHandler(sqsconsumer.Config{
		QueueURL:        "https://sqs.us-east-1.amazonaws.com/000000000000/club-notifications",
		DLQURL:          "https://sqs.us-east-1.amazonaws.com/000000000000/club-notifications-dlq",
		MaxReceiveCount: maxReceiveCount,
		Metrics:         f.metrics,
	}, f.sqs, n, logger)
	require.NoError(t, err)
}

// TestLogsRedactAddressesFromProviderErrors: whatever path a failure takes
// through the notifier and its consumer (retried, dead-lettered, recorded),
// the address the provider quotes never reaches a log line whole, while the
// rest of the error stays readable.
func TestLogsRedactAddressesFromProviderErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		status     int
		lastTry    bool
		wantStatus enrollment.NotificationStatus
	}{
		{"unavailable: retried", http.StatusServiceUnavailable, false, enrollment.NotificationPending},
		{"unavailable on the last attempt: failed", http.StatusServiceUnavailable, true, enrollment.NotificationFailed},
		{"rejected: dead-lettered", http.StatusUnprocessableEntity, false, enrollment.NotificationFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, options{})
			f.useProvider(t, quotingProvider(t, tt.status))
			s := f.enrollStudent(t, "ada.lovelace@example.com")

			receive := 1
			if tt.lastTry {
				receive = maxReceiveCount
			}
			f.deliver(t, f.delivery(s.body, receive))
			require.Equal(t, tt.wantStatus, f.notification(t, s).Status())

			logs := f.logs.String()
			require.Contains(t, logs, "is on the suppression list", "the provider's error is logged")
			require.Contains(t, logs, "a***@example.com", "with the address redacted")
			require.NotContains(t, logs, s.email)
			require.NotContains(t, logs, "postmaster@mx.example")
			for _, line := range f.logs.lines(t) {
				for k, v := range line {
					require.False(t, obs.ContainsEmail(k), "key %q", k)
					if str, ok := v.(string); ok && obs.ContainsEmail(str) {
						require.True(t, strings.Contains(str, "***@"), "%s: %q is not redacted", k, str)
					}
				}
			}
		})
	}
}
