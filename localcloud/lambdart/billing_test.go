package lambdart_test

import (
	"testing"

	"github.com/stretchr/testify/require"
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
