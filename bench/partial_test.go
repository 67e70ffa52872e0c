package bench_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/bench"
)

// TestRunOfOneBenchmarkKeepsTheRestOfTheReport: a report of benchmark 3
// alone, written over a full one, replaces §3 and its summary rows only; the
// header, the other benchmarks' rows and sections and the kept sections stay,
// and §3 says which run it comes from.
func TestRunOfOneBenchmarkKeepsTheRestOfTheReport(t *testing.T) {
	t.Parallel()
	md := filepath.Join(t.TempDir(), "benchmarks.md")
	full := sampleReport()
	full.Outage = &bench.OutageResult{Mails: 1000, Outage: 10 * time.Minute, ProviderRate: 50, ProviderCalls: 560,
		Drain: 30 * time.Second, Sent: 1000}
	full.Started = time.Date(2026, 11, 29, 23, 17, 0, 0, time.UTC)
	full.Finished = full.Started.Add(10 * time.Minute)
	_, err := full.Write(md)
	require.NoError(t, err)
	require.NoError(t, bench.WriteSection(md, "persistence-startup", "## 7. Start-up\n\n2.08 s\n"))
	before, err := os.ReadFile(md)
	require.NoError(t, err)

	alone := sampleReport()
	alone.Latency, alone.Throughput, alone.Drain, alone.Functions, alone.Profiles = nil, nil, nil, nil, nil
	alone.Outage = nil
	alone.Command = "go test -run '^$' -bench 'RequestsPerEnrollment' -benchtime 1x ./bench"
	alone.Started = time.Date(2026, 12, 2, 5, 9, 0, 0, time.UTC)
	alone.Finished = alone.Started.Add(34 * time.Second)
	alone.Machine.LoadBefore, alone.Machine.LoadAfter = 0.9, 2.3
	alone.Requests.Variants[0].Units[0].WriteUnits = 5000 // the product got cheaper
	require.False(t, alone.Full())
	_, err = alone.Write(md)
	require.NoError(t, err)
	after, err := os.ReadFile(md)
	require.NoError(t, err)
	text := string(after)

	section := func(doc, heading string) string {
		i := strings.Index(doc, heading)
		require.GreaterOrEqual(t, i, 0, "%s is there", heading)
		rest := doc[i+len(heading):]
		if j := strings.Index(rest, "\n## "); j >= 0 {
			rest = rest[:j]
		}
		return heading + rest
	}
	// Kept whole: the header, the sections of the benchmarks that did not run, the kept section.
	head := func(doc string) string { return doc[:strings.Index(doc, "## Summary")] }
	require.Equal(t, head(string(before)), head(text), "the header describes the full run")
	for _, h := range []string{"## 1. ", "## 2. ", "## 4. ", "## 5. ", "## 6. ", "## CPU profiles"} {
		require.Equal(t, section(string(before), h), section(text, h), h)
	}
	require.Contains(t, text, "<!-- begin persistence-startup -->\n## 7. Start-up\n\n2.08 s\n<!-- end persistence-startup -->\n")
	for _, row := range []string{"| enrollment latency", "| ≥ 300 enrollments/s", "| backlog drain", "| a 10m0s outage"} {
		require.Contains(t, text, row, "the other benchmarks' summary rows")
	}

	// Replaced: §3 and its rows, marked as coming from their own run.
	s3 := section(text, "## 3. ")
	require.Contains(t, s3, "This section comes from a run of its own, not the header's: 2026-12-02 05:09 UTC, 34s, on Test CPU (2 cores), load average (1 min) 0.9 at start and 2.3 at end; `go test -run '^$' -bench 'RequestsPerEnrollment' -benchtime 1x ./bench`.")
	require.Contains(t, s3, "| DynamoDB write request units | 5.00 |")
	require.NotContains(t, section(string(before), "## 3. "), "| DynamoDB write request units | 5.00 |")
	require.Contains(t, text, "$4.98 vs $7.50: ×0.66 (§3's own run) | met |", "the cost row, from the run alone")
	require.Equal(t, 1, strings.Count(text, "| cost per million enrollments"), "each row once")
	require.Equal(t, 1, strings.Count(text, "## 3. "), "each section once")
	rows := func(doc string) []string { // the summary's targets, in order
		var out []string
		for _, line := range strings.Split(section(doc, "## Summary"), "\n")[3:] {
			if cell, _, ok := strings.Cut(strings.TrimPrefix(line, "| "), " | "); ok {
				out = append(out, cell)
			}
		}
		return out
	}
	require.Len(t, rows(string(before)), 7)
	require.Equal(t, rows(string(before)), rows(text), "the summary's rows stay in the full run's order")
	require.Less(t, strings.Index(text, "## 2. "), strings.Index(text, "## 3. "))
	require.Less(t, strings.Index(text, "## 3. "), strings.Index(text, "## 4. "))
}
