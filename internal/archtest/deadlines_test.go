package archtest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNoShortRealTimeDeadlinesInTests: no test of the module waits in real
// time with a literal deadline under a minute; waits take theirs from
// internal/patience.
func TestNoShortRealTimeDeadlinesInTests(t *testing.T) {
	found, err := FindShortDeadlines("../..")
	require.NoError(t, err)
	var lines []string
	for _, d := range found {
		lines = append(lines, d.String())
	}
	require.Empty(t, lines, "short real-time deadlines in tests:\n%s", strings.Join(lines, "\n"))
}

// TestTheDeadlineRuleCatchesPlantedOnes: every form of a short deadline the
// rule knows, planted in testdata/deadlines, is found at its line; the long
// ones, the computed ones and the exempt one are let through.
func TestTheDeadlineRuleCatchesPlantedOnes(t *testing.T) {
	found, err := FindShortDeadlines("testdata/deadlines")
	require.NoError(t, err)
	type hit struct {
		line int
		call string
		of   time.Duration
	}
	var got []hit
	for _, d := range found {
		require.Equal(t, "planted_test.go", d.File)
		got = append(got, hit{d.Line, d.Call, d.Of})
	}
	require.Equal(t, []hit{
		{14, "time.Now().Add", 10 * time.Second},
		{21, "Eventually", 5 * time.Second},
		{22, "Eventually", 30 * time.Second},
		{23, "EventuallyWithT", 59 * time.Second},
		{27, "context.WithTimeout", 20 * time.Second},
		{30, "time.After", 1500 * time.Millisecond},
		{32, "time.NewTimer", waitFor},
		{34, "time.Now().Add", 500 * time.Millisecond},
	}, got)
}

const waitFor = 10 * time.Second // as planted_test.go's constant
