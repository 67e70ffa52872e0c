package bench_test

import (
	"context"
	"flag"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/bench"
)

var (
	outageFlag      = flag.Duration("club.outage", 10*time.Minute, "benchmark 6: how long the mail provider stays down after the last enrollment")
	outageMailsFlag = flag.Int("club.outage-mails", 1000, "benchmark 6: mails pending during the outage")
)

// The notifier's settings in infra/template.yaml (NotificationRetryCapSeconds,
// NotificationProbeIntervalSeconds), which the benchmark stack keeps.
const (
	outageBackoffCap    = 30 * time.Second
	outageProbeInterval = 5 * time.Second
	outageProviderRate  = 100.0 // the capacity model's provider (clubctl capacity --rate 100)
	outageInstances     = 5     // the notifier's MaximumConcurrency: one probing mail each at most
)

// BenchmarkMailOutage (benchmark 6): the mail provider is down while
// outage-mails enrollments are made and for club.outage after the last one;
// then it answers again at 100 mails/s. It measures the provider requests
// per pending mail per minute during the outage (the breaker's bound) and
// the drain after recovery against the capacity model, and checks that
// nothing was dead-lettered and every mail was sent exactly once. What the
// waiting costs in AWS requests is bench/outage's (section 10).
func BenchmarkMailOutage(b *testing.B) {
	mails, outage := *outageMailsFlag, *outageFlag
	s := product
	s.waitIdle(b, 5*time.Minute)
	students := s.students(b, max(mails/10, 20))
	classes := s.classes(b, max(mails/20, 10))

	for i := 0; i < b.N; i++ {
		s.mailReset(b)
		s.mailRate(b, outageProviderRate)
		s.mailFaults(b, map[string]any{"mode": "error", "rate": 1})
		dlqBefore := s.queued(b, "NotificationsDLQ")

		const arrival = 50.0
		enrollFor := time.Duration(float64(mails) / arrival * float64(time.Second))
		ok, failed, firstErr := createdOf(attack(s.enrollments(students, classes).targeter(s.file.APIURL), constant(arrival), enrollFor))
		require.Zero(b, failed, "every enrollment succeeds while the provider is down (first failure: %v)", firstErr)
		require.Len(b, ok, mails)

		// Wait until every mail has been handled: the breakers are open
		// and the owed mail is parked, but for the mails that probe (one an
		// instance at most); then measure the outage proper. (Read every
		// 2 s.)
		deadline := time.Now().Add(5 * time.Minute)
		for s.queued(b, "NotificationsParkingQueue") < len(ok)-outageInstances {
			require.True(b, time.Now().Before(deadline), "not within 5m: every pending mail parked but the probes")
			time.Sleep(2 * time.Second)
		}
		callsBefore, attemptsBefore := s.mailFaulted(b), s.attempts(b, ok)
		time.Sleep(outage)
		calls, attempts := s.mailFaulted(b)-callsBefore, s.attempts(b, ok)-attemptsBefore
		require.Zero(b, s.mailStats(b).Accepted, "nothing sent while the provider was down")

		recovered := time.Now()
		s.mailFaults(b, map[string]any{"mode": "none"})
		eventually(b, 10*time.Minute, "every pending mail sent", func() bool { return s.mailStats(b).Accepted >= len(ok) })
		var last time.Time
		want := map[string]bool{}
		for _, c := range ok {
			want[c.enrollmentID] = true
		}
		mailed := map[string]int{}
		for _, m := range s.mailMessages(b) {
			if id := enrollmentOfMail(m); want[id] {
				mailed[id]++
				if m.AcceptedAt.After(last) {
					last = m.AcceptedAt
				}
			}
		}
		dups := 0
		for _, n := range mailed {
			dups += n - 1
		}
		res := &bench.OutageResult{
			Mails: mails, Outage: outage, ProviderRate: outageProviderRate,
			BackoffCap: outageBackoffCap, ProbeInterval: outageProbeInterval,
			ProviderCalls: calls, Attempts: attempts,
			Drain: last.Sub(recovered), Sent: len(mailed), Duplicates: dups + s.mailStats(b).Duplicates,
			DeadLetters: s.queued(b, "NotificationsDLQ") - dlqBefore,
		}
		report.Outage = res
		b.ReportMetric(res.CallsPerMailMinute(), "provider-calls/mail/min")
		b.ReportMetric(res.Drain.Seconds(), "drain-s")
		b.ReportMetric(res.Predicted().Seconds(), "predicted-s")
		require.Zero(b, res.DeadLetters, "nothing dead-lettered")
		require.Equal(b, mails, res.Sent, "every mail sent")
		require.Zero(b, dups, "each mail once")
		s.mailRate(b, 1e6)
	}
}

// mailFaulted is how many sends the mail sandbox failed on purpose.
func (s *stack) mailFaulted(tb testing.TB) int {
	var st struct {
		FaultsInjected int `json:"faults_injected"`
	}
	s.call(tb, "GET", s.file.MailURL+"/_sandbox/stats", nil, &st)
	return st.FaultsInjected
}

// attempts sums the notification attempts of the enrollments, read from the
// club table.
func (s *stack) attempts(tb testing.TB, enrollments []created) int {
	tb.Helper()
	total := 0
	for start := 0; start < len(enrollments); start += 100 {
		var keys []map[string]ddbtypes.AttributeValue
		for _, c := range enrollments[start:min(start+100, len(enrollments))] {
			keys = append(keys, map[string]ddbtypes.AttributeValue{
				"pk": &ddbtypes.AttributeValueMemberS{Value: "ENROLLMENT#" + c.enrollmentID},
				"sk": &ddbtypes.AttributeValueMemberS{Value: "ENROLLMENT"},
			})
		}
		req := map[string]ddbtypes.KeysAndAttributes{s.file.Tables["ClubTable"]: {Keys: keys, ProjectionExpression: aws.String("notification_attempts")}}
		for len(req) > 0 {
			out, err := s.ddb.BatchGetItem(context.Background(), &dynamodb.BatchGetItemInput{RequestItems: req})
			require.NoError(tb, err)
			for _, it := range out.Responses[s.file.Tables["ClubTable"]] {
				if n, ok := it["notification_attempts"].(*ddbtypes.AttributeValueMemberN); ok {
					v, _ := strconv.Atoi(n.Value)
					total += v
				}
			}
			req = out.UnprocessedKeys
		}
	}
	return total
}
