package obs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/obs"
)

func lines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), "a JSON object per line: %s", l)
		recs = append(recs, m)
	}
	return recs
}

func TestLoggerCarriesContextAttrs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := obs.NewLogger(&buf, obs.Options{Function: "relay"})

	ctx := obs.WithAttrs(context.Background(), obs.EventID("e-1"))
	ctx = obs.WithAttrs(ctx, obs.ClassID("c-1"), obs.EnrollmentID("en-1"))
	logger.InfoContext(ctx, "published", slog.Int("n", 2))
	logger.With("component", "x").WarnContext(ctx, "derived logger", obs.Err(errors.New("boom")))
	logger.Info("no context")
	logger.Debug("below the level")

	recs := lines(t, buf.String())
	require.Len(t, recs, 3)
	require.Equal(t, "published", recs[0]["msg"])
	require.Equal(t, "INFO", recs[0]["level"])
	require.Equal(t, "relay", recs[0]["function"])
	require.Equal(t, "e-1", recs[0]["event_id"])
	require.Equal(t, "c-1", recs[0]["class_id"])
	require.Equal(t, "en-1", recs[0]["enrollment_id"])
	require.Equal(t, 2.0, recs[0]["n"])

	require.Equal(t, "e-1", recs[1]["event_id"], "loggers derived with With keep the context attrs")
	require.Equal(t, "x", recs[1]["component"])
	require.Equal(t, "boom", recs[1]["error"])

	require.NotContains(t, recs[2], "event_id")
}

func TestLoggerLevel(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	level, err := obs.ParseLevel("debug")
	require.NoError(t, err)
	obs.NewLogger(&buf, obs.Options{Level: level}).Debug("shown")
	require.Len(t, lines(t, buf.String()), 1)
}

func TestParseLevel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want slog.Level
		err  bool
	}{
		{"", slog.LevelInfo, false},
		{"INFO", slog.LevelInfo, false},
		{"warn", slog.LevelWarn, false},
		{"ERROR", slog.LevelError, false},
		{"DEBUG", slog.LevelDebug, false},
		{"TRACE", slog.LevelDebug - 4, false},
		{"FATAL", slog.LevelError + 4, false},
		{"loud", 0, true},
	}
	for _, tt := range tests {
		got, err := obs.ParseLevel(tt.in)
		if tt.err {
			require.Error(t, err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got, tt.in)
	}
}

func TestRedactEmail(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"student@example.com":  "s***@example.com",
		"élève@école.fr":       "é***@école.fr",
		"a@b":                  "a***@b",
		"odd@name@example.com": "o***@example.com",
		"no-at-sign":           "***",
		"@example.com":         "***",
		"student@":             "***",
		"":                     "",
	}
	for in, want := range tests {
		require.Equal(t, want, obs.RedactEmail(in), in)
	}
}

func TestEmailNeverLogsTheAddress(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	addr := "student.name@example.com"
	obs.NewLogger(&buf, obs.Options{}).Info("sending", slog.Any("to", obs.Email(addr)))
	fmt.Fprintf(&buf, "%v %s\n", obs.Email(addr), obs.Email(addr))
	require.NotContains(t, buf.String(), addr)
	require.Contains(t, buf.String(), `"to":"s***@example.com"`)
}

// TestLoggerRedactsAddressesWhereverTheyHide: the logger is a safety net
// for addresses that reach a log line without obs.Email — inside an error
// from a provider, a message, a nested value or a derived logger's fields.
func TestLoggerRedactsAddressesWhereverTheyHide(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := obs.NewLogger(&buf, obs.Options{Function: "notifier"}).With("owner", "ops+alerts@club.example")
	ctx := obs.WithAttrs(context.Background(), slog.String("reply_to", "reply@club.example"))

	type recipient struct {
		Address string   `json:"address"`
		CC      []string `json:"cc"`
	}
	providerErr := fmt.Errorf("send mail: %w", errors.New(`mail provider answered 422 invalid_recipient: "ada.lovelace@example.com" bounced`))
	logger.ErrorContext(ctx, "mail to grace.hopper@navy.example failed",
		obs.Err(providerErr),
		slog.Any("cause", providerErr),
		slog.String("note", "forwarded from Élodie.Durand@école.example, see thread"),
		slog.Group("message", slog.String("to", "linus@kernel.example"), slog.Int("attempt", 2)),
		slog.Any("recipient", recipient{Address: "barbara@liskov.example", CC: []string{"ken@unix.example"}}),
		slog.Any("headers", map[string]string{"From": "Club <noreply@club.example>"}),
		slog.Any("to", obs.Email("edsger@dijkstra.example")),
	)

	out := buf.String()
	for _, addr := range []string{
		"ops+alerts@club.example", "reply@club.example", "ada.lovelace@example.com", "grace.hopper@navy.example",
		"Élodie.Durand@école.example", "linus@kernel.example", "barbara@liskov.example", "ken@unix.example",
		"noreply@club.example", "edsger@dijkstra.example",
	} {
		require.NotContains(t, out, addr)
	}
	rec := lines(t, out)[0]
	require.Equal(t, "mail to g***@navy.example failed", rec["msg"])
	require.Equal(t, `send mail: mail provider answered 422 invalid_recipient: "a***@example.com" bounced`, rec["error"])
	require.Equal(t, rec["error"], rec["cause"])
	require.Equal(t, "forwarded from É***@école.example, see thread", rec["note"])
	require.Equal(t, map[string]any{"to": "l***@kernel.example", "attempt": 2.0}, rec["message"])
	require.Equal(t, map[string]any{"address": "b***@liskov.example", "cc": []any{"k***@unix.example"}}, rec["recipient"])
	require.Equal(t, map[string]any{"From": "Club <n***@club.example>"}, rec["headers"])
	require.Equal(t, "e***@dijkstra.example", rec["to"])
	require.Equal(t, "o***@club.example", rec["owner"])
	require.Equal(t, "r***@club.example", rec["reply_to"])
	require.Equal(t, "notifier", rec["function"])
}

func TestRedactTextLeavesOtherTextAlone(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"",
		"no address here",
		"meet @ 5pm",
		"user@",
		"@handle",
		"arn:aws:sqs:us-east-1:000000000000:club-notifications",
		`{"event_id":"3c1d2e4f","student_id":"student-42"}`,
	} {
		require.Equal(t, s, obs.RedactText(s))
		require.False(t, obs.ContainsEmail(s), s)
	}
	require.Equal(t, "a***@b.example and c***@d.example", obs.RedactText("a.b@b.example and cd@d.example"))
	require.Equal(t, "s***@example.com", obs.RedactText("s***@example.com"), "redacting twice changes nothing")
	require.True(t, obs.ContainsEmail("write to ann@example.com"))
}

// BenchmarkLoggerLine measures what the redaction costs per line: a typical
// request line (no "@" anywhere) and a failure quoting an address.
func BenchmarkLoggerLine(b *testing.B) {
	logger := obs.NewLogger(io.Discard, obs.Options{Function: "api"})
	ctx := obs.WithAttrs(context.Background(), obs.RequestID("req-1"))
	quoting := errors.New(`mail provider answered 422: recipient "ada.lovelace@example.com" refused`)
	b.Run("ids only", func(b *testing.B) {
		for b.Loop() {
			logger.InfoContext(ctx, "request", slog.String("method", "POST"), slog.String("route", "POST /classes/{class_id}/enrollments"),
				slog.Int("status", 201), obs.ClassID("c7e1f2a3-4b5c-4d6e-8f70-81a2b3c4d5e6"), slog.String("user_id", "student-42"))
		}
	})
	b.Run("error quoting an address", func(b *testing.B) {
		for b.Loop() {
			logger.ErrorContext(ctx, "request", slog.Int("status", 500), obs.Err(quoting))
		}
	})
}
