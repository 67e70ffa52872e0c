package outage_test

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/bench"
)

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestOutage: a 1-hour outage with 1,000 mails pending (virtual time). The
// new way costs at most 30 AWS requests per pending mail per hour, twenty
// times fewer than the old; either way every mail is sent exactly once and
// nothing is dead-lettered, and the new way sends them all within a minute
// of the recovery, with each enrollment's attempts equal to the calls that
// reached the provider for it. (The old way's cost per mail does not depend
// on the backlog; it runs with 100 mails here, to keep the test quick, and
// with 1,000 in the benchmark.)
func TestOutage(t *testing.T) {
	t.Parallel()
	old := simulate(t, false, 100, time.Hour)
	parked := simulate(t, true, 1000, time.Hour)
	t.Logf("old: %.1f requests/mail/h (%+v), drain %s", old.PerMailHour(), old.During, old.Drain)
	t.Logf("new: %.1f requests/mail/h (%+v), drain %s, parked %d", parked.PerMailHour(), parked.During, parked.Drain, parked.Parked)
	for _, r := range []Result{old, parked} {
		require.Equal(t, r.Mails, r.Sent, "%s: every mail sent", r.Way)
		require.Zero(t, r.Dups, "%s: each mail once", r.Way)
		require.Zero(t, r.Dead, "%s: nothing dead-lettered", r.Way)
	}
	require.LessOrEqual(t, parked.PerMailHour(), 30.0)
	require.GreaterOrEqual(t, old.PerMailHour()/parked.PerMailHour(), 20.0, "twentyfold fewer")
	require.LessOrEqual(t, parked.Drain, time.Minute, "all sent within a minute of the recovery")
	require.True(t, parked.AttemptsMatch, "attempts count calls to the provider")
	require.Equal(t, 2*parked.Provider, parked.During.DynamoDBWrites, "during the outage, the only writes are the probes' (the attempt, then its error)")
	require.GreaterOrEqual(t, parked.Parked, parked.Mails-instances, "all wait parked but the mails that probe, one an instance at most")
}

// TestSmallBacklogIsReleased: a few owed mails, the backlog a quiet day
// has, wait out a 10-minute outage parked, and every one is sent within a
// minute of the recovery, whichever instance each batch lands on (a
// mail that probes comes back to any instance, not to the one whose
// breaker sent it back; each seed is another order). With few mails, no
// stream of new mail wakes an instance whose breaker is still open: the
// release must not depend on one.
func TestSmallBacklogIsReleased(t *testing.T) {
	t.Parallel()
	for seed := range uint64(40) {
		r := simulateSeeded(t, true, 10, 10*time.Minute, seed+1)
		require.Equal(t, r.Mails, r.Sent, "seed %d: every mail sent (%d still parked at the end of the outage)", seed+1, r.Parked)
		require.Zero(t, r.Dups, "seed %d: each mail once", seed+1)
		require.Zero(t, r.Dead, "seed %d: nothing dead-lettered", seed+1)
		require.LessOrEqual(t, r.Drain, time.Minute, "seed %d: all sent within a minute of the recovery", seed+1)
	}
}

var (
	reportPath  = flag.String("club.report", "", "write the result as a section of this Markdown file (relative to the module root), e.g. docs/benchmarks.md")
	outageFlag  = flag.Duration("club.outage", time.Hour, "how long the mail provider stays down (virtual time)")
	mailsFlag   = flag.Int("club.outage-mails", 1000, "mails pending during the outage")
	sectionName = "mail-outage-waiting"
)

// BenchmarkOutageWaiting: the old way and the new, one after the other in
// one run, each with club.outage-mails pending through club.outage of
// virtual time; it reports the AWS requests and dollars per pending mail
// per hour of outage and the drain after the recovery.
func BenchmarkOutageWaiting(b *testing.B) {
	for i := 0; i < b.N; i++ {
		began := time.Now()
		old := simulate(b, false, *mailsFlag, *outageFlag)
		oldWall := time.Since(began)
		began = time.Now()
		parked := simulate(b, true, *mailsFlag, *outageFlag)
		parkedWall := time.Since(began)
		for _, r := range []Result{old, parked} {
			require.Equal(b, r.Mails, r.Sent, "%s: every mail sent", r.Way)
			require.Zero(b, r.Dups, "%s: each mail once", r.Way)
			require.Zero(b, r.Dead, "%s: nothing dead-lettered", r.Way)
		}
		b.ReportMetric(old.PerMailHour(), "old-requests/mail/h")
		b.ReportMetric(parked.PerMailHour(), "requests/mail/h")
		b.ReportMetric(old.PerMailHour()/parked.PerMailHour(), "fewer-x")
		b.ReportMetric(parked.Drain.Seconds(), "drain-s")
		if *reportPath != "" {
			path := *reportPath
			if !filepath.IsAbs(path) {
				path = filepath.Join(moduleRoot(b), path)
			}
			require.NoError(b, bench.WriteSection(path, sectionName, section(old, parked, oldWall, parkedWall)))
		}
	}
}

// section is the result as docs/benchmarks.md shows it.
func section(old, parked Result, oldWall, parkedWall time.Duration) string {
	var sb strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	p("## 10. What waiting out a mail outage costs\n\n")
	p("%d confirmation mails are owed when the mail provider goes down (every send answers 503); it stays down for\n", parked.Mails)
	p("%s, then answers again at %.0f mails/s. Measured by `bench/outage`, run by itself (`make bench` does not run\n", parked.Outage, providerRate)
	p("it), the old way and the new one after the other in one run. The hour is virtual: the notifier's own handler,\n")
	p("consumer, breaker and mail client, the store (in memory) and the mail sandbox run on a virtual clock over a\n")
	p("model of the notifications queue, its parking queue and the event source mapping (%d instances, batches of\n", instances)
	p("%d, no batching window, each batch to a free instance in a seeded random order), which counts each request as\n", batchSize)
	p("AWS bills it; the template's settings (backoff 1 s to\n")
	p("%s, probe every %s, budget %s). The measured window starts %s into the outage, once every mail has\n", backoffCap, probeInterval, retryBudget, warmup)
	p("been handled. Empty long polls of the event source mapping cost the same whatever the backlog and are left out;\n")
	p("so is Lambda's duration (milliseconds a batch). Dollars at the list prices of section 3 (SQS $%.2f, DynamoDB\n", bench.ListPrices.SQSRequest)
	p("$%.3f a million write units and $%.3f a million read units, Lambda $%.2f a million invocations).\n\n", bench.ListPrices.DynamoDBWriteUnit, bench.ListPrices.DynamoDBReadUnit, bench.ListPrices.LambdaInvocation)
	p("| | |\n|---|---|\n")
	p("| machine (runs the model; the figures do not depend on it) | %s, %d cores |\n", cpuModel(), runtime.NumCPU())
	p("| run | %s |\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	p("| reproduce | `go test -run '^$' -bench OutageWaiting -benchtime 1x ./bench/outage -args -club.report docs/benchmarks.md` |\n\n")
	p("| per pending mail per hour of outage | old: back with the backoff | new: parked, released by the probers |\n|---|---|---|\n")
	row := func(name string, f func(Result) string) { p("| %s | %s | %s |\n", name, f(old), f(parked)) }
	per := func(n int, r Result) float64 { return float64(n) / float64(r.Mails) / r.Outage.Hours() }
	row("SQS requests", func(r Result) string { return fmt.Sprintf("%.1f", per(r.During.SQS, r)) })
	row("DynamoDB writes (conditional updates)", func(r Result) string { return fmt.Sprintf("%.1f", per(r.During.DynamoDBWrites, r)) })
	row("DynamoDB reads (address batches)", func(r Result) string { return fmt.Sprintf("%.1f", per(r.During.DynamoDBReads, r)) })
	row("Lambda invocations", func(r Result) string { return fmt.Sprintf("%.1f", per(r.During.Invocations, r)) })
	row("**AWS requests** (target ≤ 30)", func(r Result) string { return fmt.Sprintf("**%.1f**", r.PerMailHour()) })
	row("dollars", func(r Result) string { return fmt.Sprintf("$%.7f", r.DollarsPerMailHour()) })
	row("dollars per mail over a 24-hour outage", func(r Result) string { return fmt.Sprintf("$%.5f", 24*r.DollarsPerMailHour()) })
	row("calls to the provider, per mail per minute", func(r Result) string {
		return fmt.Sprintf("%.4f", float64(r.Provider)/float64(r.Mails)/r.Outage.Minutes())
	})
	p("\n| outcome | old | new |\n|---|---|---|\n")
	row("mails parked at the end of the outage", func(r Result) string { return strconv.Itoa(r.Parked) })
	row("last mail sent after the recovery (target ≤ 60 s)", func(r Result) string { return r.Drain.Round(100 * time.Millisecond).String() })
	row("mails sent / sent twice / dead-lettered", func(r Result) string { return fmt.Sprintf("%d / %d / %d", r.Sent, r.Dups, r.Dead) })
	row("every enrollment's attempts = its calls to the provider", func(r Result) string { return yesNo(r.AttemptsMatch) })
	row("requests per mail in the first "+warmup.String()+", before the window", func(r Result) string {
		return fmt.Sprintf("%.1f", float64(r.Warmup.Total())/float64(r.Mails))
	})
	p("\nThe new way costs **%.0f× fewer** requests per pending mail per hour. What remains is the probers (at most\n", old.PerMailHour()/parked.PerMailHour())
	p("one an instance; %d in this run): each comes back every probe interval and costs its attempt's two writes, a\n", parked.Mails-parked.Parked)
	p("copy and its share of a batch; they do not grow with the backlog, so per pending mail they fall\n")
	p("as the backlog grows. Each parked mail costs its first attempts and one SendMessage when it is parked (the\n")
	p("first minutes, the last row) and a tenth of a receive, a batch send and a batch delete when it is released,\n")
	p("however long the outage. In the old way a mail's attempts also counted the sends the open breaker refused;\n")
	p("now they count calls to the provider. The model ran in %.1f s (old) and %.1f s (new) of wall time.\n", oldWall.Seconds(), parkedWall.Seconds())
	p("Design and failure windows: docs/architecture.md, \"Waiting out a mail outage\".\n")
	return sb.String()
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

func moduleRoot(t testing.TB) string {
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above")
		dir = parent
	}
}

// cpuModel is the processor's name, from /proc/cpuinfo.
func cpuModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown processor"
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
		}
	}
	return "unknown processor"
}
