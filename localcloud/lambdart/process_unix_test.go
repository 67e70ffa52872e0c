//go:build unix

package lambdart_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/localcloud/lambdart"
)

func TestStopLeavesNoProcess(t *testing.T) {
	t.Parallel()
	spawner := fn("spawn", "spawner")
	spawner.Concurrency = 2
	e := setup(t, setupOptions{}, spawner, fn("sleep", "sleeper"))

	var pids []int
	for _, st := range e.rt.Stats() {
		pids = append(pids, st.PIDs...)
	}
	require.Len(t, pids, 3)

	// Each spawner invocation leaves a child running in its process group.
	for range 2 {
		res := e.invoke(t, "spawner", nil)
		require.False(t, res.Failed(), "%s", res.Payload)
		var got struct {
			ChildPID int `json:"childPid"`
		}
		require.NoError(t, json.Unmarshal(res.Payload, &got))
		require.False(t, processGone(got.ChildPID))
		pids = append(pids, got.ChildPID)
	}
	// And one process is in the middle of an invocation.
	running := make(chan error, 1)
	go func() {
		res, err := e.rt.Invoke(context.Background(), "sleeper", []byte(`{"ms":60000}`))
		if err == nil && res.Error().ErrorType != "Runtime.ExitError" {
			err = fmt.Errorf("want Runtime.ExitError, got %s", res.Payload)
		}
		running <- err
	}()
	require.Eventually(t, func() bool { return e.stats(t, "sleeper").Busy == 1 }, patience.Wait(), 5*time.Millisecond)

	require.NoError(t, e.rt.Stop())

	require.NoError(t, <-running, "the running invocation fails when its process is stopped")
	for _, pid := range pids[:3] {
		require.True(t, processGone(pid), "function process %d survived Stop", pid)
	}
	// Children die by the group SIGKILL; init reaps them asynchronously.
	for _, pid := range pids[3:] {
		require.Eventually(t, func() bool { return processGone(pid) }, patience.Wait(), 10*time.Millisecond,
			"child process %d survived Stop", pid)
	}
	for name, st := range e.rt.Stats() {
		require.Empty(t, st.PIDs, "%s still lists processes", name)
	}
	_, err := e.rt.Invoke(t.Context(), "sleeper", nil)
	require.ErrorIs(t, err, lambdart.ErrStopped)
}

func TestStopKillsProcessesThatIgnoreSIGTERM(t *testing.T) {
	t.Parallel()
	stubborn := fn("sleep", "stubborn")
	stubborn.Concurrency = 2
	stubborn.Env = map[string]string{"IGNORE_SIGTERM": "1"}
	e := setup(t, setupOptions{}, stubborn) // StopGrace is 500 ms
	pids := e.stats(t, "stubborn").PIDs
	require.Len(t, pids, 2)

	start := time.Now()
	require.NoError(t, e.rt.Stop())
	elapsed := time.Since(start)
	require.GreaterOrEqual(t, elapsed, 500*time.Millisecond, "SIGTERM was ignored, so Stop waited the grace period")
	for _, pid := range pids {
		require.True(t, processGone(pid), "process %d survived Stop", pid)
	}
}

func TestTimeoutKillsAndRestartsProcess(t *testing.T) {
	t.Parallel()
	cfg := fn("sleep", "slow")
	cfg.Timeout = 500 * time.Millisecond
	e := setup(t, setupOptions{}, cfg)
	pids := e.stats(t, "slow").PIDs
	require.Len(t, pids, 1)

	start := time.Now()
	res := e.invoke(t, "slow", map[string]int{"ms": 60_000})
	elapsed := time.Since(start)
	require.True(t, res.Failed())
	require.Equal(t, "Sandbox.Timedout", res.Error().ErrorType)
	require.Contains(t, res.Error().ErrorMessage, "Task timed out after 0.50 seconds")
	// The handler sleeps a minute; the invocation ended by the timeout,
	// not by the handler (e.invoke gives it 20 s at most).
	require.GreaterOrEqual(t, elapsed, 500*time.Millisecond)

	require.Eventually(t, func() bool { return processGone(pids[0]) }, patience.Wait(), 10*time.Millisecond,
		"the timed-out process is killed")
	require.Eventually(t, func() bool { return !slices.Contains(e.stats(t, "slow").PIDs, pids[0]) },
		patience.Wait(), 10*time.Millisecond, "the killed process leaves the stats")

	after := decodePID(t, e.invoke(t, "slow", map[string]int{"ms": 0}))
	require.NotEqual(t, pids[0], after)
	st := e.stats(t, "slow")
	require.Equal(t, uint64(1), st.Timeouts)
	require.Equal(t, uint64(1), st.Restarts)
	require.Zero(t, st.Crashes, "a timeout kill is not a crash")
}

// processGone reports whether pid no longer runs. A zombie counts as gone:
// it runs no code, and reaping an orphan is up to init.
func processGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// The state follows the parenthesised command name.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
}

// TestReadyListsEveryProcess: once Ready returns, Stats lists a process for
// every slot. A process may poll /next before its start has returned its
// pid to the runtime (a busy machine); its slot is ready only when both
// are done. Not parallel: the delay applies to every process started.
func TestReadyListsEveryProcess(t *testing.T) {
	restore := lambdart.DelayPIDRecording(func() { time.Sleep(300 * time.Millisecond) }) // patience:exempt the busy machine's delay, not a deadline
	defer restore()
	many := fn("sleep", "many")
	many.Concurrency = 4
	e := setup(t, setupOptions{}, many)
	require.Len(t, e.stats(t, "many").PIDs, 4, "a process listed for every ready slot")
}
