package bench_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/bench"
)

// BenchmarkRequestsPerEnrollment (benchmark 3) counts the AWS requests of
// enrollments end to end, by service and operation, for the product's
// design and for a naive one (testdata/naive), each on its own local cloud
// and measured the same way.
func BenchmarkRequestsPerEnrollment(b *testing.B) {
	const (
		rate     = 100.0
		duration = 10 * time.Second
	)
	res := &bench.RequestsResult{Rate: rate}
	for i := 0; i < b.N; i++ {
		res.Variants = []bench.RequestVariant{
			countRequests(b, product, rate, duration, true, bench.RequestVariant{
				Name: "product",
				Description: "infra/template.yaml: the stream polled four times a second, relay batches of up to 100 " +
					"records, 10 events per PublishBatch, the batch's marks 25 rows per BatchWriteItem; the notifier writes " +
					"its status once per step without reading and reads a batch's addresses at once; analytics commits " +
					"a batch of up to 50 events and their inbox rows in one transaction, roster one conditional write per entry, which records its events",
			}),
		}
		if !*naiveFlag {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		naive, err := startStack(ctx, filepath.Join(moduleRoot(), "bench/testdata/naive/template.yaml"), "")
		cancel()
		require.NoError(b, err, "start the naive stack")
		res.Variants = append(res.Variants, countRequests(b, naive, rate, duration, false, bench.RequestVariant{
			Name: "naive",
			Description: "bench/testdata/naive: one relay invocation per outbox record, one SNS publish per event, and " +
				"analytics and roster read a separate idempotency record before the effect and write it after",
		}))
		require.NoError(b, naive.close())
	}
	for _, v := range res.Variants {
		b.ReportMetric(v.PerEnrollment(), v.Name+"-requests/enrollment")
	}
	report.Requests = res
}

// pipelineIgnores are requests only the benchmark makes (waiting for the
// queues to drain); they are left out of the counts.
var pipelineIgnores = map[string]bool{"sqs GetQueueAttributes": true}

// countRequests measures v on s. exact: every effect must be there exactly
// once (the product's promise); otherwise what was found is only recorded.
func countRequests(b *testing.B, s *stack, rate float64, duration time.Duration, exact bool, v bench.RequestVariant) bench.RequestVariant {
	b.Helper()
	s.waitIdle(b, 5*time.Minute)
	s.mailReset(b)
	s.mailRate(b, 1e6)
	classes := s.classes(b, 10)
	gen := s.enrollments(s.students(b, 100), classes)

	before := s.functionStats(b)
	stored := s.storage(b)
	s.resetRequests(b)
	s.meter(b, true)
	ok, failed, firstErr := createdOf(attack(gen.targeter(s.file.APIURL), constant(rate), duration))
	require.Zero(b, failed, "%s: every enrollment succeeds (first failure: %v)", v.Name, firstErr)
	eventually(b, 3*time.Minute, "every enrollment mailed", func() bool { return s.mailStats(b).Accepted >= len(ok) })
	s.waitIdle(b, 5*time.Minute)
	for _, op := range s.requests(b) {
		if !pipelineIgnores[op.Service+" "+op.Operation] {
			v.Ops = append(v.Ops, op)
		}
	}
	v.Units = s.units(b)
	s.meter(b, false)
	v.Stored = bench.StoredSince(stored, s.storage(b))
	after := s.functionStats(b)
	v.Invocations = invocationsSince(invocationCounts(before), invocationCounts(after))
	v.Functions = functionUse(before, after)
	v.Enrollments = len(ok)
	byID := map[string]created{}
	for _, c := range ok {
		byID[c.enrollmentID] = c
		v.API = append(v.API, c.latency)
	}
	for _, m := range s.mailMessages(b) {
		if c, ours := byID[enrollmentOfMail(m)]; ours {
			v.EndToEnd = append(v.EndToEnd, max(m.AcceptedAt.Sub(c.at), 0))
			delete(byID, c.enrollmentID)
		}
	}

	v.RosterEntries, v.StatsTotal = s.effects(b, classes)
	if exact {
		require.Equal(b, len(ok), v.RosterEntries, "%s: every enrollment on a roster", v.Name)
		require.Equal(b, len(ok), v.StatsTotal, "%s: every enrollment counted once", v.Name)
	}
	return v
}
