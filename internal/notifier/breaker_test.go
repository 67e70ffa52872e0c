package notifier

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/clock"
	"github.com/clubdev/club/internal/mail"
	mailsandbox "github.com/clubdev/club/internal/sandbox/mail"
)

// TestBreakerProbesADeadProviderInsteadOfHammeringIt: while the provider is
// down, a hundred pending mails cost it the threshold's calls and then one
// probe per interval; the blocked sends are transient (unavailable, never
// unknown). Once a probe succeeds, every send goes through again.
func TestBreakerProbesADeadProviderInsteadOfHammeringIt(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(enrolledAt)
	sandbox := mailsandbox.New(mailsandbox.Options{Clock: clk})
	hs := httptest.NewServer(sandbox)
	t.Cleanup(hs.Close)
	client, err := mail.New(mail.Config{BaseURL: hs.URL, Timeout: 2 * time.Second})
	require.NoError(t, err)
	b := &Breaker{Next: client, Threshold: 5, ProbeInterval: 5 * time.Second, Now: clk.Now}
	require.NoError(t, sandbox.SetFaults(mailsandbox.Faults{Mode: mailsandbox.FaultError, Rate: 1}, nil))

	ctx := context.Background()
	sendAll := func(round int) (blocked int) {
		for i := range 100 {
			_, err := b.Send(ctx, fmt.Sprintf("notify-%d", i), message(i))
			if err == nil {
				continue
			}
			require.ErrorIs(t, err, mail.ErrUnavailable, "round %d, send %d", round, i)
			require.NotErrorIs(t, err, mail.ErrOutcomeUnknown, "the provider was not asked: the outcome is known")
			if errors.Is(err, ErrCircuitOpen) {
				blocked++
			}
		}
		return blocked
	}
	require.Equal(t, 95, sendAll(0), "five failures open the breaker")
	require.EqualValues(t, 5, sandbox.Stats().FaultsInjected)
	for round := 1; round <= 10; round++ {
		clk.Advance(5 * time.Second)
		require.Equal(t, 99, sendAll(round), "one probe per interval")
	}
	require.EqualValues(t, 15, sandbox.Stats().FaultsInjected, "5 + one probe per interval, for 1,100 sends")
	require.True(t, b.Stats().Open)

	require.NoError(t, sandbox.SetFaults(mailsandbox.Faults{Mode: mailsandbox.FaultNone}, nil))
	clk.Advance(2 * time.Second)
	require.Equal(t, 100, sendAll(11), "no probe before the interval")
	clk.Advance(3 * time.Second)
	require.Equal(t, 0, sendAll(12), "the probe succeeded and closed the breaker")
	require.False(t, b.Stats().Open)
	require.Len(t, sandbox.Messages(""), 100, "every mail sent once")
}
