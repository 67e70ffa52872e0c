package clubctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCapacityModel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"6000 at 100/s", []string{"--backlog", "6000", "--rate", "100"}, []string{
			"Backlog 6000 messages, 0/s arriving, 100/s completed: the debt shrinks at 100/s.",
			"Drain time: 1m0s.",
		}},
		{"80/s still arriving", []string{"--backlog", "6000", "--arrival", "80", "--rate", "100/s"}, []string{
			"the debt shrinks at 20/s.", "Drain time: 5m0s.", "no message waits longer than 1m0s",
		}},
		{"a 10 s promise", []string{"--backlog", "6000", "--arrival", "80", "--rate", "100", "--deadline", "10s"}, []string{
			"Drain time: 5m0s.",
			"Deadline 10s: the promise cannot hold. Keeping it needs 680/s (6.8× the rate), or a backlog of at most 200 at the current rate.",
		}},
		{"a promise that holds", []string{"--backlog", "6000", "--rate", "100", "--deadline", "90s"}, []string{
			"Deadline 1m30s: the promise holds (30s to spare).",
		}},
		{"never drains", []string{"--backlog", "10", "--arrival", "120", "--rate", "100", "--deadline", "1m"}, []string{
			"it never drains: 20/s more arrive than are completed.",
			"Keeping it needs 120.2/s (1.2× the rate).",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runWith(t, nil, append([]string{"capacity"}, tt.args...)...)
			require.Equal(t, 0, code, stderr)
			for _, w := range tt.want {
				require.Contains(t, stdout, w)
			}
		})
	}
}

func TestCapacityJSON(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runWith(t, nil, "capacity", "--backlog", "6000", "--arrival", "80", "--rate", "100", "--deadline", "10s", "--json")
	require.Equal(t, 0, code, stderr)
	var out capacityOutput
	require.NoError(t, json.Unmarshal([]byte(stdout), &out))
	require.Equal(t, 300.0, *out.DrainSeconds)
	require.Equal(t, 60.0, *out.WorstWaitSeconds)
	require.False(t, *out.Holds)
	require.Equal(t, 680.0, *out.RequiredRate)
	require.Nil(t, out.Simulation)
}

func TestCapacitySimulateAndPlot(t *testing.T) {
	t.Parallel()
	plot := filepath.Join(t.TempDir(), "drain.png")
	code, stdout, stderr := runWith(t, nil, "capacity", "--backlog", "6000", "--arrival", "80", "--rate", "100", "--plot", plot, "--rows", "5")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "Simulation over 10m0s:")
	require.Regexp(t, `Drained after (4m[3-5]\d|5m[0-2]\d)s \(model: 5m0s\); the longest wait was (5\d(\.\d)?s|1m\ds)\.`, stdout)
	require.Regexp(t, `(?m)^\s+t\s+waiting\s+in flight\s+retrying\s+done\s+dead\s+oldest\s*$`, stdout)
	require.Len(t, regexp.MustCompile(`(?m)^\s+(\d+m)?\d+s\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\S+\s*$`).FindAllString(stdout, -1), 5, "five curve rows")
	require.Contains(t, stdout, "Plot: "+plot)
	data, err := os.ReadFile(plot)
	require.NoError(t, err)
	require.Equal(t, "\x89PNG", string(data[:4]))

	code, stdout, stderr = runWith(t, nil, "capacity", "--backlog", "6000", "--arrival", "80", "--rate", "100", "--simulate", "--failure-rate", "0.1", "--horizon", "20m", "--json")
	require.Equal(t, 0, code, stderr)
	var out capacityOutput
	require.NoError(t, json.Unmarshal([]byte(stdout), &out))
	require.True(t, out.Simulation.Drained)
	require.Greater(t, *out.Simulation.DrainSeconds, 450.0, "retries eat capacity")
	require.Len(t, out.Simulation.Curve, 201)
}

func TestCapacityErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no rate", []string{"--backlog", "6000"}, `required flag(s) "rate" not set`},
		{"zero rate", []string{"--backlog", "6000", "--rate", "0"}, "rate 0 must be a positive number"},
		{"bad rate", []string{"--backlog", "6000", "--rate", "lots"}, `--rate "lots": want messages per second`},
		{"negative backlog", []string{"--backlog", "-5", "--rate", "10"}, "backlog -5 must be a non-negative number"},
		{"bad deadline", []string{"--backlog", "5", "--rate", "10", "--deadline", "soon"}, `invalid argument "soon" for "--deadline"`},
		{"simulation flag alone", []string{"--backlog", "5", "--rate", "10", "--workers", "3"}, "--workers is a simulation setting: add --simulate"},
		{"certain failure", []string{"--backlog", "5", "--rate", "10", "--simulate", "--failure-rate", "1"}, "failure rate 1 must be at least 0 and below 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runWith(t, nil, append([]string{"capacity"}, tt.args...)...)
			require.Equal(t, 2, code, stderr)
			require.Empty(t, stdout)
			require.Contains(t, stderr, tt.wantErr)
		})
	}
}
