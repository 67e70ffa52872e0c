package fault

import (
	"bytes"
	"context"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
)

// setup serves a Registry and returns a client of it, as a function named
// fn would build it from the local cloud's environment.
func setup(t *testing.T, fn string) (*Registry, *client, *bytes.Buffer, *[]int) {
	t.Helper()
	reg := NewRegistry()
	mux := httptest.NewServer(reg)
	t.Cleanup(mux.Close)
	var stderr bytes.Buffer
	var exits []int
	env := map[string]string{envEndpoint: mux.URL, envFunctionName: fn}
	c := newClient(func(k string) string { return env[k] }, &stderr, func(code int) { exits = append(exits, code) })
	return reg, c, &stderr, &exits
}

func TestClientCarriesOutEachAction(t *testing.T) {
	t.Parallel()
	reg, c, stderr, exits := setup(t, "club-relay")
	require.NoError(t, reg.Arm(Plan{Rules: []Rule{
		{Point: RelayBeforePublish, Function: "club-relay", Action: Crash, Times: 1},
		{Point: RelayAfterPublish, Action: Fail, Times: 1},
		{Point: RelayAfterMark, Action: Delay, DelayMS: 1, Times: 1},
	}}))
	ctx := context.Background()

	err := c.inject(ctx, RelayBeforePublish, "e1")
	require.Equal(t, []int{ExitCode}, *exits, "crash exits the process")
	require.Contains(t, stderr.String(), `fault: crash at relay.before_publish (key "e1", rule 0)`)
	require.Error(t, err)

	err = c.inject(ctx, RelayAfterPublish, "e1")
	fe, ok := err.(*Error)
	require.True(t, ok, "%T", err)
	require.Equal(t, &Error{Point: RelayAfterPublish, Key: "e1"}, fe)
	require.EqualError(t, err, `fault injected at relay.after_publish (key "e1")`)

	require.NoError(t, c.inject(ctx, RelayAfterMark, "e1"), "a delay lets the program continue")

	// Each rule was once: the same points now pass untouched.
	for _, p := range []Point{RelayBeforePublish, RelayAfterPublish, RelayAfterMark} {
		require.NoError(t, c.inject(ctx, p, "e2"))
	}
	require.Len(t, *exits, 1)
	s := reg.State()
	require.Len(t, s.Fired, 3)
	require.Equal(t, "club-relay", s.Fired[0].Function, "the client names its function")
}

func TestDelayEndsWithItsContext(t *testing.T) {
	t.Parallel()
	reg, c, _, _ := setup(t, "api")
	require.NoError(t, reg.Arm(Plan{Rules: []Rule{{Point: APIAfterCommit, Action: Delay, DelayMS: int(MaxDelay.Milliseconds())}}}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.inject(ctx, APIAfterCommit, "k") }()
	require.Eventually(t, func() bool { return reg.State().PassCount(APIAfterCommit, "") == 1 }, patience.Wait(), time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

func TestWithoutAControlEndpointNothingHappens(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	c := newClient(func(string) string { return "" }, &stderr, func(int) { t.Fatal("exit") })
	require.NoError(t, c.inject(context.Background(), APIBeforeCommit, "k"))
	require.Empty(t, stderr.String())

	// An endpoint that does not answer: no fault, one warning.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c = newClient(func(k string) string {
		if k == EnvURL {
			return "http://" + addr + "/_club/faults/"
		}
		return ""
	}, &stderr, func(int) { t.Fatal("exit") })
	require.Equal(t, "http://"+addr+"/_club/faults/hit", c.hitURL)
	for range 3 {
		require.NoError(t, c.inject(context.Background(), APIBeforeCommit, "k"))
	}
	require.Equal(t, 1, bytes.Count(stderr.Bytes(), []byte("running without faults")))
}

func TestEndpointComesFromTheAWSEndpoint(t *testing.T) {
	t.Parallel()
	env := map[string]string{envEndpoint: "http://127.0.0.1:4566/"}
	c := newClient(func(k string) string { return env[k] }, nil, nil)
	require.Equal(t, "http://127.0.0.1:4566/_club/faults/hit", c.hitURL)
	env[EnvURL] = "http://elsewhere:1/faults"
	c = newClient(func(k string) string { return env[k] }, nil, nil)
	require.Equal(t, "http://elsewhere:1/faults/hit", c.hitURL, "CLUB_FAULTS_URL wins")
}
