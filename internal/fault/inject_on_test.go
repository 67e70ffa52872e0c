//go:build faults

package fault_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/fault"
)

// A faults build asks the control endpoint named by the environment.
func TestFaultsBuildAsksTheControlEndpoint(t *testing.T) {
	reg := fault.NewRegistry()
	srv := httptest.NewServer(reg)
	t.Cleanup(srv.Close)
	t.Setenv(fault.EnvURL, srv.URL+"/_club/faults")
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "club-notifier")
	require.True(t, fault.Enabled)
	require.NoError(t, reg.Arm(fault.Plan{Rules: []fault.Rule{{Point: fault.NotifierAfterSend, Action: fault.Fail, Times: 1}}}))

	err := fault.Inject(context.Background(), fault.NotifierAfterSend, "event-1")
	var fe *fault.Error
	require.True(t, errors.As(err, &fe), "%v", err)
	require.NoError(t, fault.Inject(context.Background(), fault.NotifierAfterSend, "event-1"))
	s := reg.State()
	require.EqualValues(t, 2, s.PassCount(fault.NotifierAfterSend, "club-notifier"))
	require.Equal(t, "club-notifier", s.Fired[0].Function)
}
