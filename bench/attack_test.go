package bench_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestArrivalsCountsWhatThePacerSchedules: the number of requests an attack
// sends is the pacer's schedule over the duration, for the constant rate and
// for the drain benchmark's phases.
func TestArrivalsCountsWhatThePacerSchedules(t *testing.T) {
	t.Parallel()
	require.EqualValues(t, 27000, arrivals(constant(450), time.Minute))
	require.EqualValues(t, 18000, arrivals(constant(300), time.Minute))
	require.EqualValues(t, 7, arrivals(constant(7), time.Second))
	phases := phasedPacer{{rate: 100, until: 2 * time.Second}, {rate: 10, until: 3 * time.Second}}
	require.EqualValues(t, 210, arrivals(phases, 3*time.Second))
}

// TestALatePacerStillSendsEveryArrival: when the load generator gets no CPU
// until after the attack's duration (as at saturation, where it shares the
// machine with the stack), the arrivals it owes are sent late, not dropped.
func TestALatePacerStillSendsEveryArrival(t *testing.T) {
	t.Parallel()
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	tr := func(tgt *vegeta.Target) error {
		tgt.Method, tgt.URL = http.MethodPost, srv.URL
		return nil
	}
	results := attack(tr, &starved{Pacer: constant(100), for_: 300 * time.Millisecond}, 100*time.Millisecond)
	require.Len(t, results, 10)
	for _, r := range results {
		require.Equal(t, uint16(http.StatusCreated), r.Code, r.Error)
	}
	require.EqualValues(t, 10, served.Load())
}

// starved is a pacer whose first call does not return until for_ has
// passed: a load generator that got no CPU for that long.
type starved struct {
	vegeta.Pacer
	for_ time.Duration
	once sync.Once
}

func (p *starved) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	p.once.Do(func() { time.Sleep(p.for_) })
	return p.Pacer.Pace(elapsed, hits)
}
