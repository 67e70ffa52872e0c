package bench_test

import (
	"context"
	"math"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	vegeta "github.com/tsenart/vegeta/v12/lib"

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
	// Every (student, class) pair enrolls at most once: enough students
	// for the whole run at its rate (400 at least).
	const nClasses = 60
	students := s.students(b, max(400, int(math.Ceil(rate*duration.Seconds()/nClasses))+1))
	classes := s.classes(b, nClasses)

	for i := 0; i < b.N; i++ {
		gen := s.enrollments(students, classes)
		before := s.invocations(b)
		s.resetRequests(b)
		prof := startProfiles(b, s)
		var start, end time.Time
		var results []*vegeta.Result
		var ok []created
		pprof.Do(context.Background(), loadLabel, func(context.Context) {
			start = time.Now()
			results = attack(gen.targeter(s.file.APIURL), constant(rate), duration)
			end = time.Now()
			var failed int
			var firstErr error
			ok, failed, firstErr = createdOf(results)
			if failed > 0 {
				b.Logf("%d of %d enrollments failed; first: %v", failed, len(results), firstErr)
			}
			eventually(b, 5*time.Minute, "every enrollment mailed and every queue drained", func() bool {
				return s.mailStats(b).Accepted >= len(ok) && s.queued(b, consumerQueues...) == 0
			})
		})
		self, functions := prof.cpu(b)
		report.Profiles = prof.stop(b)
		failed := len(results) - len(ok)
		res := &bench.ThroughputResult{
			TargetRate: rate, Duration: duration, Sent: len(results), Created: len(ok), Failed: failed, MaxInFlight: maxInFlight,
			Ops: s.requests(b), Invocations: invocationsSince(before, s.invocations(b)),
		}
		res.CPU = append(prof.splitSelf(b, self), functions...)
		s.countEffects(b, res, ok, classes, start, end)
		report.Throughput = res
		e2e := bench.Summarize(res.EndToEnd)
		b.ReportMetric(res.AchievedRate(), "enrollments/s")
		b.ReportMetric(float64(e2e.P50)/float64(time.Millisecond), "e2e-p50-ms")
		b.ReportMetric(float64(e2e.P99)/float64(time.Millisecond), "e2e-p99-ms")
		b.ReportMetric(res.CPUPerThousand(res.CPUTotal()), "cpu-s/1000-enrollments")
		logCPU(b, res)
		if res.Unanswered() > 0 {
			b.Logf("%d enrollments committed without a 201 (the load generator gave up on them)", res.Unanswered())
		}
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
	res.Committed = s.committed(tb, classes)
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

// logCPU logs the CPU seconds per 1,000 enrollments of every process, with
// the processor and the load average: they are also in the report.
func logCPU(tb testing.TB, res *bench.ThroughputResult) {
	tb.Helper()
	tb.Logf("%s; load average %.2f; %d created at %.1f/s", report.Machine.CPU, loadAverage(), res.Created, res.AchievedRate())
	for _, c := range append(res.CPU, res.CPUTotal()) {
		tb.Logf("%-90s %3d processes %7.1f CPU s %6.2f per 1,000", c.Component, c.Processes, c.Seconds, res.CPUPerThousand(c))
	}
}
