package bench_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/bench"
)

// BenchmarkPipelineThroughput (benchmark 2) sends enrollments at a constant
// rate through the whole pipeline, waits until every effect has appeared,
// then counts each effect against the 201s and measures the end-to-end
// notification latency. The benchmark process and every function process
// are CPU-profiled over the run.
func BenchmarkPipelineThroughput(b *testing.B) {
	rate, duration := *rateFlag, *durationFlag
	s := product
	s.waitIdle(b, 5*time.Minute)
	s.mailReset(b)
	s.mailRate(b, 1e6)
	students := s.students(b, 400)
	classes := s.classes(b, 60)

	for i := 0; i < b.N; i++ {
		gen := s.enrollments(students, classes)
		before := s.invocations(b)
		s.resetRequests(b)
		prof := startProfiles(b, s)
		start := time.Now()
		results := attack(gen.targeter(s.file.APIURL), constant(rate), duration)
		end := time.Now()
		ok, failed, firstErr := createdOf(results)
		if failed > 0 {
			b.Logf("%d of %d enrollments failed; first: %v", failed, len(results), firstErr)
		}
		eventually(b, 5*time.Minute, "every enrollment mailed and every queue drained", func() bool {
			return s.mailStats(b).Accepted >= len(ok) && s.queued(b, consumerQueues...) == 0
		})
		report.Profiles = prof.stop(b)
		res := &bench.ThroughputResult{
			TargetRate: rate, Duration: duration, Sent: len(results), Created: len(ok), Failed: failed,
			Ops: s.requests(b), Invocations: invocationsSince(before, s.invocations(b)),
		}
		s.countEffects(b, res, ok, classes, start, end)
		report.Throughput = res
		e2e := bench.Summarize(res.EndToEnd)
		b.ReportMetric(res.AchievedRate(), "enrollments/s")
		b.ReportMetric(float64(e2e.P50)/float64(time.Millisecond), "e2e-p50-ms")
		b.ReportMetric(float64(e2e.P99)/float64(time.Millisecond), "e2e-p99-ms")
		require.Zero(b, res.Lost(), "no effect lost")
		require.Zero(b, res.Duplicated(), "no effect duplicated")
	}
}

// countEffects counts every effect of the enrollments in ok and fills the
// end-to-end latencies and the timeline of res.
func (s *stack) countEffects(tb testing.TB, res *bench.ThroughputResult, ok []created, classes []string, start, end time.Time) {
	tb.Helper()
	byID := make(map[string]created, len(ok))
	ids := make(map[string]bool, len(ok))
	for _, c := range ok {
		byID[c.enrollmentID] = c
		ids[c.enrollmentID] = true
		res.API = append(res.API, c.latency)
		res.Span = max(res.Span, c.at.Sub(start))
	}
	mailed := map[string]bool{}
	var last time.Time
	var acceptedAt []time.Time
	for _, m := range s.mailMessages(tb) {
		c, ours := byID[enrollmentOfMail(m)]
		if !ours {
			continue
		}
		res.MailsTotal++
		if mailed[c.enrollmentID] {
			continue
		}
		mailed[c.enrollmentID] = true
		res.EndToEnd = append(res.EndToEnd, max(m.AcceptedAt.Sub(c.at), 0))
		acceptedAt = append(acceptedAt, m.AcceptedAt)
		if m.AcceptedAt.After(last) {
			last = m.AcceptedAt
		}
	}
	res.Mails = len(mailed)
	res.Settled = max(last.Sub(end), 0)
	res.OutboxRows, res.OutboxPublished = s.outboxRows(tb, ids)
	res.RosterEntries, res.StatsTotal = s.effects(tb, classes)
	res.DeadLetters = s.queued(tb, deadLetterQueues...)

	seconds := int(last.Sub(start).Seconds()) + 1
	res.Timeline = make([]bench.TimelinePoint, max(seconds, 1))
	for i := range res.Timeline {
		res.Timeline[i].Second = i
	}
	bucket := func(t time.Time) int { return min(max(int(t.Sub(start).Seconds()), 0), len(res.Timeline)-1) }
	for _, c := range ok {
		res.Timeline[bucket(c.at)].Enrolled++
	}
	for _, t := range acceptedAt {
		res.Timeline[bucket(t)].Mailed++
	}
}
