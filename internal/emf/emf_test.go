package emf_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/emf"
)

// decoded is an EMF line as CloudWatch reads it.
type decoded struct {
	AWS struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
	Fields map[string]any `json:"-"`
}

func decodeLines(t *testing.T, out string) []decoded {
	t.Helper()
	var lines []decoded
	for _, text := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var d decoded
		require.NoError(t, json.Unmarshal([]byte(text), &d), "each line is one JSON object: %s", text)
		require.NoError(t, json.Unmarshal([]byte(text), &d.Fields))
		lines = append(lines, d)
	}
	return lines
}

func TestEmit(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	err := emf.Entry{
		Namespace:  "Club",
		Dimensions: map[string]string{"Function": "relay", "Source": "stream"},
		Metrics: []emf.Metric{
			emf.Durations("OutboxPublishLag", 1500*time.Microsecond, 2*time.Second),
			emf.Counter("Published", 2),
			{Name: "Empty", Unit: emf.Count}, // no samples: left out
		},
		Properties: map[string]any{"event_id": "e-1"},
		Timestamp:  at,
	}.Emit(&buf)
	require.NoError(t, err)

	lines := decodeLines(t, buf.String())
	require.Len(t, lines, 1)
	l := lines[0]
	require.Equal(t, at.UnixMilli(), l.AWS.Timestamp)
	require.Len(t, l.AWS.CloudWatchMetrics, 1)
	cw := l.AWS.CloudWatchMetrics[0]
	require.Equal(t, "Club", cw.Namespace)
	require.Equal(t, [][]string{{"Function", "Source"}}, cw.Dimensions, "one dimension set, sorted")
	require.Equal(t, []struct{ Name, Unit string }{
		{"OutboxPublishLag", "Milliseconds"}, {"Published", "Count"},
	}, cw.Metrics)
	require.Equal(t, []any{1.5, 2000.0}, l.Fields["OutboxPublishLag"], "several samples are an array")
	require.Equal(t, 2.0, l.Fields["Published"], "one sample is a number")
	require.Equal(t, "relay", l.Fields["Function"])
	require.Equal(t, "e-1", l.Fields["event_id"])
	require.NotContains(t, l.Fields, "Empty")
}

func TestEmitSplitsLongSeries(t *testing.T) {
	t.Parallel()
	ds := make([]time.Duration, 250)
	for i := range ds {
		ds[i] = time.Duration(i) * time.Millisecond
	}
	var buf bytes.Buffer
	require.NoError(t, emf.Emit(&buf, "Club", nil, []emf.Metric{emf.Durations("Lag", ds...), emf.Counter("Runs", 1)}))

	lines := decodeLines(t, buf.String())
	require.Len(t, lines, 3, "100 + 100 + 50 samples")
	var all []float64
	for i, l := range lines {
		vs, ok := l.Fields["Lag"].([]any)
		require.True(t, ok)
		require.LessOrEqual(t, len(vs), emf.MaxValuesPerLine)
		for _, v := range vs {
			all = append(all, v.(float64))
		}
		require.Equal(t, [][]string{{}}, l.AWS.CloudWatchMetrics[0].Dimensions, "no dimensions is one empty set")
		if i == 0 {
			require.Equal(t, 1.0, l.Fields["Runs"], "a single sample is reported once")
		} else {
			require.NotContains(t, l.Fields, "Runs")
			require.Len(t, l.AWS.CloudWatchMetrics[0].Metrics, 1)
		}
	}
	require.Len(t, all, 250)
	for i, v := range all {
		require.Equal(t, float64(i), v, "samples keep their order")
	}
}

func TestEmitNothingToReport(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.NoError(t, emf.Emit(&buf, "Club", map[string]string{"Function": "relay"}, []emf.Metric{emf.Durations("Lag")}))
	require.Empty(t, buf.String())
}

func TestEmitInvalid(t *testing.T) {
	t.Parallel()
	one := []emf.Metric{emf.Counter("N", 1)}
	tests := []struct {
		name  string
		entry emf.Entry
		want  string
	}{
		{"no namespace", emf.Entry{Metrics: one}, "empty namespace"},
		{"AWS namespace", emf.Entry{Namespace: "AWS/SQS", Metrics: one}, "reserved"},
		{"empty metric name", emf.Entry{Namespace: "Club", Metrics: []emf.Metric{emf.Counter("", 1)}}, "empty metric name"},
		{"duplicate metric", emf.Entry{Namespace: "Club", Metrics: []emf.Metric{emf.Counter("N", 1), emf.Counter("N", 2)}}, `"N" is already used`},
		{"metric named like a dimension", emf.Entry{Namespace: "Club", Dimensions: map[string]string{"N": "x"}, Metrics: one}, `"N" is already used`},
		{"property named like a metric", emf.Entry{Namespace: "Club", Metrics: one, Properties: map[string]any{"N": 1}}, `"N" is already used`},
		{"reserved key", emf.Entry{Namespace: "Club", Metrics: one, Properties: map[string]any{"_aws": 1}}, `"_aws" is already used`},
		{"empty dimension value", emf.Entry{Namespace: "Club", Dimensions: map[string]string{"Function": ""}, Metrics: one}, "empty value"},
		{"NaN", emf.Entry{Namespace: "Club", Metrics: []emf.Metric{{Name: "X", Values: []float64{math.NaN()}}}}, "non-finite"},
		{"Inf", emf.Entry{Namespace: "Club", Metrics: []emf.Metric{{Name: "X", Values: []float64{math.Inf(1)}}}}, "non-finite"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			err := tt.entry.Emit(&buf)
			require.ErrorIs(t, err, emf.ErrInvalid)
			require.ErrorContains(t, err, tt.want)
			require.Empty(t, buf.String(), "nothing is written for an invalid entry")
		})
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestEmitWriteError(t *testing.T) {
	t.Parallel()
	err := emf.Emit(failingWriter{}, "Club", nil, []emf.Metric{emf.Counter("N", 1)})
	require.ErrorContains(t, err, "disk full")
}

// lockedBuffer serialises writes, as os.Stdout does.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func TestEmitConcurrentLinesStayWhole(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			require.NoError(t, emf.Emit(&out, "Club", map[string]string{"Function": "f"}, []emf.Metric{emf.Counter("N", 1)}))
		})
	}
	wg.Wait()
	require.Len(t, decodeLines(t, out.buf.String()), 20)
}
