//go:build !faults

package fault_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/fault"
)

// A normal build has no fault points: Inject does nothing, allocates nothing
// and never reaches for a control endpoint, whatever the environment says.
func TestNormalBuildInjectsNothing(t *testing.T) {
	t.Setenv(fault.EnvURL, "http://127.0.0.1:1/_club/faults")
	require.False(t, fault.Enabled)
	ctx := context.Background()
	for _, p := range fault.Points {
		require.NoError(t, fault.Inject(ctx, p, "key"))
	}
	allocs := testing.AllocsPerRun(100, func() {
		_ = fault.Inject(ctx, fault.RelayAfterPublish, "key")
	})
	require.Zero(t, allocs)
}

func BenchmarkInjectNormalBuild(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		_ = fault.Inject(ctx, fault.ConsumerAfterCommit, "key")
	}
}
