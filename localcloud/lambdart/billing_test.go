package lambdart_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
)

// Each invocation a process runs adds its duration, rounded up to the
// millisecond, to the function's billed milliseconds; the stats carry the
// memory size they are billed at.
func TestStatsCarryBilledMillisecondsAndMemorySize(t *testing.T) {
	t.Parallel()
	cfg := fn("sleep", "billed")
	cfg.MemoryMB = 512
	e := setup(t, setupOptions{}, cfg)
	require.Zero(t, e.stats(t, "billed").BilledMs)

	const calls, sleepMS = 3, 50
	for range calls {
		res := e.invoke(t, "billed", map[string]any{"ms": sleepMS})
		require.False(t, res.Failed(), "%s", res.Payload)
	}
	st := e.stats(t, "billed")
	require.EqualValues(t, calls, st.Invocations)
	require.GreaterOrEqual(t, st.BilledMs, uint64(calls*sleepMS), "at least the time the function slept")
	require.Equal(t, 512, st.MemoryMB)
}

// The stats count every line of the function's log, its own output and the
// runtime's START, END and REPORT lines, and their bytes without the
// newlines: what CloudWatch Logs would ingest, as the log file holds it.
func TestStatsCountTheLogLinesAndTheirBytes(t *testing.T) {
	t.Parallel()
	e := setup(t, setupOptions{}, fn("echo", "logged"))
	require.Zero(t, e.stats(t, "logged").LogEvents)

	const calls = 3
	payload := `{"say":"a line of the function's own"}`
	for range calls {
		res := e.invoke(t, "logged", json.RawMessage(payload))
		require.False(t, res.Failed(), "%s", res.Payload)
	}
	// A process's output reaches the log through a pipe, on its own time
	// (on AWS too): wait for the last line, then compare.
	var log []byte
	require.Eventually(t, func() bool {
		var err error
		log, err = os.ReadFile(filepath.Join(e.logDir, "logged.log"))
		require.NoError(t, err)
		return strings.Count(string(log), payload) == calls
	}, patience.Wait(), 10*time.Millisecond, "the function's own lines are in the log")
	st := e.stats(t, "logged")
	lines := strings.Split(strings.TrimSuffix(string(log), "\n"), "\n")
	require.Equal(t, calls, strings.Count(string(log), "\tBilled Duration: "), "REPORT says what was billed")
	require.EqualValues(t, len(lines), st.LogEvents)
	require.EqualValues(t, len(log)-len(lines), st.LogBytes, "the file's bytes less one newline a line")
	require.GreaterOrEqual(t, st.LogEvents, uint64(calls*4), "START, the function's line, END and REPORT per invocation")
}
