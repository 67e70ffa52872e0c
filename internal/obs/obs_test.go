package obs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
