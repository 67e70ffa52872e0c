package bench_test

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/clubdev/club/bench"
)

// BenchmarkBacklogDrain (benchmark 4) checks docs/principles.md §1.8's capacity model
// scaled down: the mail provider takes 50 mails/s; a surge of enrollments
// builds a backlog of about 600 queued mails; then enrollments keep arriving
// at 40/s, so the backlog should shrink at 10/s and drain in about 60 s —
// the seed's 6,000 / 100 / 80 (300 s) with the same arrival-to-provider
// ratio, scaled to what this machine's API sustains during the surge.
func BenchmarkBacklogDrain(b *testing.B) {
	const (
		provider  = 50.0
		surge     = 125.0
		surgeFor  = 8 * time.Second // (125 − 50) × 8 = 600 queued
		arrival   = 40.0
		arriveFor = 80 * time.Second
	)
	s := product
	s.waitIdle(b, 5*time.Minute)
	students := s.students(b, 200)
	classes := s.classes(b, 40)

	for i := 0; i < b.N; i++ {
		s.mailReset(b)
		s.mailRate(b, provider)
		gen := s.enrollments(students, classes)
		start := time.Now()
		pacer := phasedPacer{{rate: surge, until: surgeFor}, {rate: arrival, until: surgeFor + arriveFor}}
		ok, failed, firstErr := createdOf(attack(gen.targeter(s.file.APIURL), pacer, surgeFor+arriveFor))
		require.Zero(b, failed, "every enrollment succeeds (first failure: %v)", firstErr)
		eventually(b, 5*time.Minute, "every enrollment mailed", func() bool { return s.mailStats(b).Accepted >= len(ok) })
		s.mailRate(b, 1e6)

		ids := map[string]bool{}
		arrivals := make([]time.Time, 0, len(ok))
		for _, c := range ok {
			ids[c.enrollmentID] = true
			arrivals = append(arrivals, c.at)
		}
		var accepted []time.Time
		mailed := map[string]bool{}
		for _, m := range s.mailMessages(b) {
			if id := enrollmentOfMail(m); ids[id] && !mailed[id] {
				mailed[id] = true
				accepted = append(accepted, m.AcceptedAt)
			}
		}
		sort.Slice(accepted, func(i, j int) bool { return accepted[i].Before(accepted[j]) })
		zero := start.Add(surgeFor)
		curve := bench.BacklogCurve(arrivals, accepted, zero, start, accepted[len(accepted)-1], 250*time.Millisecond)
		res := &bench.DrainResult{
			ProviderRate: provider, ArrivalRate: arrival, SurgeRate: surge, Surge: surgeFor,
			Enrollments: len(ok), Mails: len(mailed), DeadLetters: s.queued(b, "NotificationsDLQ"), Curve: curve,
		}
		// The steady level is what one second of arrivals keeps in flight
		// once the debt is paid; the backlog to drain is what lies above it.
		steady := int(arrival)
		res.Steady = steady
		for _, pt := range curve {
			if pt.T == 0 {
				res.Backlog = max(pt.Backlog-steady, 0)
			}
		}
		end, drained := bench.DrainEnd(curve, steady)
		require.True(b, drained, "the backlog drains")
		res.Measured = end
		report.Drain = res
		b.ReportMetric(res.Predicted().Seconds(), "predicted-s")
		b.ReportMetric(res.Measured.Seconds(), "measured-s")
		b.ReportMetric(res.Error()*100, "error-%")
		require.Equal(b, len(ok), len(mailed), "every enrollment mailed")
		require.Zero(b, res.DeadLetters, "no notification dead-lettered")
	}
}

// phasedPacer sends at each phase's rate until the phase's end (measured
// from the start of the attack), then stops after the last phase. A phase
// includes its end, as vegeta's constant pacer does.
type phasedPacer []struct {
	rate  float64
	until time.Duration
}

var _ vegeta.Pacer = phasedPacer{}

// Pace implements vegeta.Pacer: hits so far against where the schedule
// says they should be.
func (p phasedPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	var expected float64
	var from time.Duration
	for _, ph := range p {
		if elapsed <= ph.until {
			expected += ph.rate * (elapsed - from).Seconds()
			if float64(hits) < expected {
				return 0, false
			}
			return time.Duration((float64(hits) + 1 - expected) / ph.rate * float64(time.Second)), false
		}
		expected += ph.rate * (ph.until - from).Seconds()
		from = ph.until
	}
	return 0, true
}

// Rate implements vegeta.Pacer.
func (p phasedPacer) Rate(elapsed time.Duration) float64 {
	for _, ph := range p {
		if elapsed < ph.until {
			return ph.rate
		}
	}
	return 0
}
