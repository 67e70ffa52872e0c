package patience

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func reset(t *testing.T, v string) {
	t.Setenv(Env, v)
	once, factor, problem = sync.Once{}, 0, nil
	t.Cleanup(func() { once, factor, problem = sync.Once{}, 0, nil })
}

func TestDefaultsAreGenerous(t *testing.T) {
	reset(t, "")
	require.Equal(t, 2*time.Minute, Wait())
	require.Equal(t, time.Minute, Scaled(10*time.Second), "a budget under a minute is raised to the floor")
	require.Equal(t, 20*time.Minute, Scaled(20*time.Minute))
	require.Equal(t, 2*time.Minute, Within(5*time.Second), "a wait on other processes gets at least Wait()")
	require.Equal(t, 10*time.Minute, Within(10*time.Minute))
	require.WithinDuration(t, time.Now().Add(2*time.Minute), Deadline(), 5*time.Second)
}

func TestTheVariableScalesEveryWait(t *testing.T) {
	reset(t, "2.5")
	require.Equal(t, 5*time.Minute, Wait())
	require.Equal(t, 150*time.Second, Scaled(time.Second))
	require.Equal(t, 50*time.Minute, Scaled(20*time.Minute))
	require.Equal(t, 5*time.Minute, Within(time.Second))
}

func TestBadSettingsAreRefusedByName(t *testing.T) {
	for _, v := range []string{"fast", "0.5", "0"} {
		reset(t, v)
		require.PanicsWithError(t, map[string]string{
			"fast": `patience: CLUB_PATIENCE="fast" is not a number`,
			"0.5":  `patience: CLUB_PATIENCE="0.5" is below 1; it scales the deadlines up, never down`,
			"0":    `patience: CLUB_PATIENCE="0" is below 1; it scales the deadlines up, never down`,
		}[v], func() { Wait() })
	}
}
