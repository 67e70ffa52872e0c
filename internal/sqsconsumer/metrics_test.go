package sqsconsumer_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club/inbox"
	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/sqsconsumer/sqsconsumertest"
)

// metricValue returns the single sample of a metric in an EMF line.
func metricValue(t *testing.T, line map[string]any, name string) float64 {
	t.Helper()
	switch v := line[name].(type) {
	case float64:
		return v
	case []any:
		require.Len(t, v, 1, "metric %s", name)
		return v[0].(float64)
	default:
		t.Fatalf("metric %s missing or of type %T in %v", name, line[name], line)
		return 0
	}
}

// TestBatchMetricsCountEachOutcome: one EMF line per batch, under the
// consumer's name, counting each message once by what became of it (a
// retry's copy counts as retried, not acknowledged), and the queue wait of
// every message.
func TestBatchMetricsCountEachOutcome(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name   string
		budget time.Duration
	}{
		{"retried in place", 0},
		{"retried as a copy", time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var metrics bytes.Buffer
			c, err := sqsconsumer.New(sqsconsumer.Config{
				Name: "metered", QueueURL: "http://sqs.local/000000000000/q", DLQURL: "http://sqs.local/000000000000/q-dlq",
				RetryBudget: tt.budget, Metrics: &metrics, Now: func() time.Time { return now }, Jitter: noJitter,
			}, &sqsconsumertest.SQS{}, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			sent := now.Add(-3 * time.Second)
			ev := sqsconsumertest.Event(
				sqsconsumertest.Record("ok", "ok", 1, sent, nil),
				sqsconsumertest.Record("dup", "dup", 1, sent, nil),
				sqsconsumertest.Record("bad", "bad", 1, sent, nil),
				sqsconsumertest.Record("later", "later", 1, sent, nil),
			)
			c.Process(context.Background(), ev, func(_ context.Context, m sqsconsumer.Message) error {
				switch m.ID {
				case "dup":
					return inbox.ErrDuplicate
				case "bad":
					return sqsconsumer.Permanent("bad_thing", errors.New("bad"))
				case "later":
					return errors.New("throttled")
				}
				return nil
			})

			lines := jsonLines(t, &metrics)
			require.Len(t, lines, 1, "one line per batch")
			line := lines[0]
			require.Equal(t, "metered", line["Function"])
			require.EqualValues(t, 2, metricValue(t, line, sqsconsumer.MetricAcknowledged), "the duplicate is acknowledged too")
			require.EqualValues(t, 1, metricValue(t, line, sqsconsumer.MetricDuplicates))
			require.EqualValues(t, 1, metricValue(t, line, sqsconsumer.MetricDeadLettered))
			require.EqualValues(t, 1, metricValue(t, line, sqsconsumer.MetricRetried))
			require.Equal(t, []any{3000.0, 3000.0, 3000.0, 3000.0}, line[sqsconsumer.MetricQueueWait], "now − SentTimestamp of each message, in ms")
		})
	}
}
