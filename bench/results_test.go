package bench_test

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/bench"
)

func msd(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestPercentileIsNearestRank(t *testing.T) {
	t.Parallel()
	samples := []time.Duration{}
	for i := 100; i >= 1; i-- { // unsorted on purpose
		samples = append(samples, msd(i))
	}
	tests := []struct {
		p    float64
		want time.Duration
	}{
		{50, msd(50)}, {99, msd(99)}, {100, msd(100)}, {1, msd(1)}, {0.1, msd(1)},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, bench.Percentile(samples, tt.p), "p%v", tt.p)
	}
	require.Equal(t, msd(100), samples[0], "the samples are left as they were")
	require.Zero(t, bench.Percentile(nil, 50))

	d := bench.Summarize([]time.Duration{msd(3), msd(1), msd(2)})
	require.Equal(t, bench.Distribution{N: 3, P50: msd(2), P99: msd(3), Max: msd(3)}, d)
}

func TestLatencyRatiosCompareSlowWithFastPhases(t *testing.T) {
	t.Parallel()
	r := &bench.LatencyResult{Phases: []bench.LatencyPhase{
		{Variant: bench.VariantAsync, MailLatencyMS: 0, Samples: []time.Duration{msd(10), msd(20)}},
		{Variant: bench.VariantAsync, MailLatencyMS: 2000, Samples: []time.Duration{msd(11), msd(22)}},
		{Variant: bench.VariantSync, MailLatencyMS: 0, Samples: []time.Duration{msd(10), msd(10)}},
		{Variant: bench.VariantSync, MailLatencyMS: 2000, Samples: []time.Duration{msd(2010), msd(2020)}},
	}}
	p50, p99 := r.Ratios(bench.VariantAsync, 0, 2000)
	require.InDelta(t, 1.1, p50, 1e-9)
	require.InDelta(t, 1.1, p99, 1e-9)
	p50, _ = r.Ratios(bench.VariantSync, 0, 2000)
	require.InDelta(t, 201, p50, 1e-9)
	p50, p99 = r.Ratios("other", 0, 2000)
	require.Zero(t, p50+p99, "a missing phase gives no ratio")
}

func TestThroughputCountsLossAndDuplicates(t *testing.T) {
	t.Parallel()
	r := bench.ThroughputResult{Duration: 10 * time.Second, Created: 100, OutboxRows: 100, OutboxPublished: 100,
		Mails: 100, MailsTotal: 100, RosterEntries: 100, StatsTotal: 100}
	require.InDelta(t, 10, r.AchievedRate(), 1e-9)
	r.Span = 20 * time.Second // the API fell behind: the last 201 came late
	require.InDelta(t, 5, r.AchievedRate(), 1e-9)
	r.Span = 0
	require.Zero(t, r.Lost())
	require.Zero(t, r.Duplicated())

	r.Mails, r.MailsTotal = 98, 99 // two enrollments without mail, one mailed twice
	r.StatsTotal = 101             // one counted twice
	r.OutboxPublished = 97         // three rows still pending
	require.Equal(t, 5, r.Lost())
	require.Equal(t, 2, r.Duplicated())

	// Overloaded: ten enrollments committed whose clients gave up before
	// their 201. The read models count them; that is neither loss nor
	// duplication.
	o := bench.ThroughputResult{Created: 100, Committed: 110, OutboxRows: 100, OutboxPublished: 100,
		Mails: 100, MailsTotal: 100, RosterEntries: 110, StatsTotal: 110}
	require.Equal(t, 10, o.Unanswered())
	require.Zero(t, o.Lost())
	require.Zero(t, o.Duplicated())
	o.StatsTotal = 111 // one counted twice
	o.RosterEntries = 109
	require.Equal(t, 1, o.Duplicated())
	require.Equal(t, 1, o.Lost())
	o.Committed = 99 // a 201 whose enrollment is not there
	o.RosterEntries, o.StatsTotal = 100, 100
	require.Equal(t, 1, o.Lost())
}

func TestPredictDrainIsTheCapacityModel(t *testing.T) {
	t.Parallel()
	// docs/principles.md §1.8: 6,000 queued, provider 100/s, arrivals 80/s → 300 s.
	d, ok := bench.PredictDrain(6000, 80, 100)
	require.True(t, ok)
	require.Equal(t, 300*time.Second, d)
	d, ok = bench.PredictDrain(600, 8, 10)
	require.True(t, ok)
	require.Equal(t, 300*time.Second, d)
	_, ok = bench.PredictDrain(600, 100, 100)
	require.False(t, ok, "a backlog never drains while arrivals match the provider")

	r := bench.DrainResult{Backlog: 600, ArrivalRate: 80, ProviderRate: 100, Measured: 33 * time.Second}
	require.Equal(t, 30*time.Second, r.Predicted())
	require.InDelta(t, 0.1, r.Error(), 1e-9)
}

func TestBacklogCurveAndDrainEnd(t *testing.T) {
	t.Parallel()
	zero := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return zero.Add(time.Duration(s * float64(time.Second))) }
	// 10 arrivals before zero; mails go out one a second from zero on.
	var arrivals, mails []time.Time
	for i := range 10 {
		arrivals = append(arrivals, at(-1+float64(i)*0.05))
		mails = append(mails, at(float64(i)+0.5))
	}
	curve := bench.BacklogCurve(arrivals, mails, zero, at(-1), at(10), time.Second)
	require.Len(t, curve, 12)
	require.Equal(t, bench.BacklogPoint{T: -time.Second, Backlog: 1}, curve[0])
	require.Equal(t, bench.BacklogPoint{T: 0, Backlog: 10}, curve[1])
	require.Equal(t, bench.BacklogPoint{T: 3 * time.Second, Backlog: 7}, curve[4])
	end, ok := bench.DrainEnd(curve, 2)
	require.True(t, ok)
	require.Equal(t, 8*time.Second, end)

	// A backlog that rises again after touching the level has not drained
	// until it stays there.
	bumpy := []bench.BacklogPoint{{T: 0, Backlog: 9}, {T: time.Second, Backlog: 1}, {T: 2 * time.Second, Backlog: 5}, {T: 3 * time.Second, Backlog: 1}}
	end, ok = bench.DrainEnd(bumpy, 2)
	require.True(t, ok)
	require.Equal(t, 3*time.Second, end)
	_, ok = bench.DrainEnd([]bench.BacklogPoint{{T: 0, Backlog: 9}}, 2)
	require.False(t, ok)
}

func TestCostPricesEachRequestClass(t *testing.T) {
	t.Parallel()
	v := bench.RequestVariant{
		Enrollments: 10,
		Ops: []bench.OpCount{
			{Service: "dynamodb", Operation: "TransactWriteItems", Count: 10},
			{Service: "sqs", Operation: "ReceiveMessage", Count: 5},
			{Service: "sqs", Operation: "DeleteMessageBatch", Count: 5},
			{Service: "sns", Operation: "PublishBatch", Count: 1},
			{Service: "sns", Operation: "Subscribe", Count: 1},
		},
		Units: []bench.UnitCount{
			{Service: "dynamodb", Operation: "TransactWriteItems", Requests: 10, WriteUnits: 84, Items: 40, TransactionItems: 40},
			{Service: "dynamodb", Operation: "UpdateItem", Requests: 20, WriteUnits: 20, IndexWriteUnits: 5, Items: 20},
			{Service: "dynamodb", Operation: "GetItem", Requests: 30, ReadUnits: 15, Items: 30},
			{Service: "sns", Operation: "PublishBatch", Requests: 1, Billed: 2},
			{Service: "sns", Operation: "Subscribe", Requests: 1, Billed: 1}, // not a publish
			{Service: "sqs", Operation: "ReceiveMessage", Requests: 5, Billed: 6},
			{Service: "sqs", Operation: "DeleteMessageBatch", Requests: 5, Billed: 5},
		},
		Invocations: map[string]int64{"api": 10, "relay": 1},
		Functions: map[string]bench.FunctionUse{
			"api":   {BilledMs: 10 * 4, MemoryMB: 256, LogEvents: 40, LogBytes: 10 * 3072}, // 0.04 s × 0.25 GB; 3 KB of log an enrollment
			"relay": {BilledMs: 1000, MemoryMB: 1024, LogEvents: 3, LogBytes: 1024},        // 1 s × 1 GB
		},
	}
	require.InDelta(t, 2.2, v.PerEnrollment(), 1e-9)
	require.InDelta(t, 1.1, v.InvocationsPerEnrollment(), 1e-9)
	require.InDelta(t, 4, v.TransactionItemsPerEnrollment(), 1e-9)
	require.InDelta(t, 8.4, v.TransactWriteUnitsPerEnrollment(), 1e-9)
	gbs := (0.04*0.25 + 1*1) / 10
	require.InDelta(t, gbs, v.GBSecondsPerEnrollment(), 1e-12)
	lines := bench.Cost(v, bench.ListPrices)
	units := map[string]float64{}
	for _, l := range lines {
		units[l.Item] = l.Units
	}
	require.InDelta(t, 8.4+2, units[bench.CostWriteUnits], 1e-9)
	require.InDelta(t, 0.5, units[bench.CostIndexUnits], 1e-9)
	require.InDelta(t, 1.5, units[bench.CostReadUnits], 1e-9)
	require.InDelta(t, 0.2, units[bench.CostSNS], 1e-9)
	require.InDelta(t, 1.1, units[bench.CostSQS], 1e-9)
	require.InDelta(t, gbs, units[bench.CostDuration], 1e-12)
	kb := (10*3072.0 + 1024) / 1024 / 10
	require.InDelta(t, kb, units[bench.CostLogs], 1e-9)
	want := 10.4*0.625 + 0.5*0.625 + 1.5*0.125 + 0.2*0.50 + 1.1*0.40 + 1.1*0.20 + gbs*0.0000133334*1e6 + 1*1.00 +
		kb/(1024*1024)*0.50*1e6 // $0.50 per GB of logs
	require.InDelta(t, want, bench.TotalUSD(lines), 1e-9)
	require.Nil(t, bench.Cost(bench.RequestVariant{}, bench.ListPrices))
}

// TestStoragePricesWhatARunAdded: the storage a run added is the tables'
// growth (a table that did not grow is left out), and it is priced per
// GB-month kept, its point-in-time recovery on the tables without their
// indexes.
func TestStoragePricesWhatARunAdded(t *testing.T) {
	t.Parallel()
	before := []bench.StoredTable{
		{Table: "club", Items: 50, Bytes: 9000, IndexItems: 5, IndexBytes: 700, ExpiringItems: 10, ExpiringBytes: 2000},
		{Table: "outbox", Items: 7, Bytes: 1400},
		{Table: "idle", Items: 3, Bytes: 600},
	}
	after := []bench.StoredTable{
		{Table: "club", Items: 90, Bytes: 17000, IndexItems: 15, IndexBytes: 2700, ExpiringItems: 20, ExpiringBytes: 4500},
		{Table: "outbox", Items: 17, Bytes: 3400},
		{Table: "idle", Items: 3, Bytes: 600},
		{Table: "new", Items: 10, Bytes: 1000},
	}
	stored := bench.StoredSince(before, after)
	require.Equal(t, []bench.StoredTable{
		{Table: "club", Items: 40, Bytes: 8000, IndexItems: 10, IndexBytes: 2000, ExpiringItems: 10, ExpiringBytes: 2500},
		{Table: "outbox", Items: 10, Bytes: 2000},
		{Table: "new", Items: 10, Bytes: 1000},
	}, stored)

	st := bench.StorageOf(bench.RequestVariant{Enrollments: 10, Stored: stored}, bench.ListPrices)
	require.InDelta(t, 1300, st.Bytes, 1e-9) // (8000 + 2000 + 2000 + 1000) / 10
	require.InDelta(t, 200, st.IndexBytes, 1e-9)
	require.InDelta(t, 250, st.ExpiringBytes, 1e-9)
	require.InDelta(t, 1300*1e6/(1<<30)*0.25, st.USDPerMonth, 1e-9)
	require.InDelta(t, 1100*1e6/(1<<30)*0.20, st.PITRUSDPerMonth, 1e-9)
	require.InDelta(t, 1050*1e6/(1<<30)*0.25, st.KeptUSDPerMonth, 1e-9)
	require.Zero(t, bench.StorageOf(bench.RequestVariant{}, bench.ListPrices).Bytes)
}

func sampleReport() *bench.Report {
	lat := func(base int) []time.Duration {
		var s []time.Duration
		for i := range 200 {
			s = append(s, msd(base+i%17))
		}
		return s
	}
	var timeline []bench.TimelinePoint
	for i := range 10 {
		timeline = append(timeline, bench.TimelinePoint{Second: i, Enrolled: 300, Mailed: 290 + i})
	}
	var curve []bench.BacklogPoint
	for i := -4; i <= 40; i++ {
		curve = append(curve, bench.BacklogPoint{T: time.Duration(i) * time.Second, Backlog: max(600-20*max(i, 0), 10)})
	}
	ops := []bench.OpCount{{Service: "dynamodb", Operation: "TransactWriteItems", Count: 3000}, {Service: "sns", Operation: "Publish", Count: 1000}}
	return &bench.Report{
		Machine: bench.Machine{CPU: "Test CPU", Cores: 2, MemoryGiB: 24, OS: "linux/amd64", GoVersion: "go1.26"},
		Command: "make bench",
		Latency: &bench.LatencyResult{Rate: 40, Duration: 15 * time.Second, Phases: []bench.LatencyPhase{
			{Variant: bench.VariantAsync, MailLatencyMS: 0, Sent: 200, Created: 200, Samples: lat(5)},
			{Variant: bench.VariantSync, MailLatencyMS: 0, Sent: 200, Created: 200, Samples: lat(4)},
			{Variant: bench.VariantAsync, MailLatencyMS: 2000, Sent: 200, Created: 200, Samples: lat(5)},
			{Variant: bench.VariantSync, MailLatencyMS: 2000, Sent: 200, Created: 200, Samples: lat(2004)},
		}},
		Throughput: &bench.ThroughputResult{
			TargetRate: 300, Duration: 10 * time.Second, Sent: 3000, Created: 3000, API: lat(5), EndToEnd: lat(80),
			OutboxRows: 3000, OutboxPublished: 3000, Mails: 3000, MailsTotal: 3000, RosterEntries: 3000, StatsTotal: 3000,
			Ops: ops, Invocations: map[string]int64{"api": 3000}, Timeline: timeline,
			CPU: []bench.ProcessCPU{{Component: "load generator", Seconds: 0.6}, {Component: "local cloud", Processes: 1, Seconds: 15},
				{Component: "function api", Processes: 4, Seconds: 6}},
		},
		Requests: &bench.RequestsResult{Rate: 100, Variants: []bench.RequestVariant{
			{Name: "product", Enrollments: 1000, Ops: ops, Invocations: map[string]int64{"api": 1000},
				Units: []bench.UnitCount{{Service: "dynamodb", Operation: "TransactWriteItems", Requests: 3000, WriteUnits: 6600, Items: 3300, TransactionItems: 3300}},
				Functions: map[string]bench.FunctionUse{"api": {BilledMs: 5000, MemoryMB: 256, LogEvents: 4000, LogBytes: 640_000},
					"notifier": {BilledMs: 3000, MemoryMB: 256, LogEvents: 1100, LogBytes: 700_000}, "relay": {BilledMs: 100, MemoryMB: 256}},
				Stored: []bench.StoredTable{{Table: "club", Items: 4000, Bytes: 1_000_000, IndexItems: 1000, IndexBytes: 200_000},
					{Table: "outbox", Items: 1000, Bytes: 400_000, ExpiringItems: 1000, ExpiringBytes: 400_000}}},
			{Name: "naive", Enrollments: 1000, Ops: append(ops, bench.OpCount{Service: "dynamodb", Operation: "GetItem", Count: 2000}),
				Units: []bench.UnitCount{{Service: "dynamodb", Operation: "TransactWriteItems", Requests: 3000, WriteUnits: 10000, Items: 5000, TransactionItems: 5000},
					{Service: "dynamodb", Operation: "GetItem", Requests: 2000, ReadUnits: 2000, Items: 2000}}},
		}},
		Drain: &bench.DrainResult{ProviderRate: 100, ArrivalRate: 80, SurgeRate: 250, Surge: 4 * time.Second,
			Backlog: 600, Measured: 31 * time.Second, Enrollments: 4000, Mails: 4000, Curve: curve},
		Functions: []bench.FunctionResult{{Name: "api", SizeBytes: 20 << 20, StartToFirstPoll: []time.Duration{msd(20), msd(25)}}},
		Profiles:  []bench.ProfileSummary{{Component: "function api", Seconds: 1.5, Top: "      flat  flat%\n 1s 50% main.f\n"}},
	}
}

func TestReportWritesTablesAndPlots(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	md := filepath.Join(dir, "benchmarks.md")
	files, err := sampleReport().Write(md)
	require.NoError(t, err)
	require.Len(t, files, 5, "four plots and the page")

	page, err := os.ReadFile(md)
	require.NoError(t, err)
	text := string(page)
	for _, want := range []string{
		"| machine | Test CPU, 2 cores, 24 GiB, linux/amd64 |",
		"| reproduce | `make bench` (about 10 minutes;",
		"| product API (outbox) | 2000 ms | 200 | 200 |",
		"×1.00", // the product's ratio
		"| **lost / duplicated effects** | **0 / 0** |",
		"| dynamodb | TransactWriteItems | 3.00 | 3.00 |",
		"| **all AWS requests** | | **4.00** | **6.00** |",
		"$0.625 per million write request units",
		"| CloudWatch Logs ingested (KB) | 1.31 | 0.62 |",
		"by function, in bytes (what the CloudWatch Logs line prices): product: notifier 700, api 640; naive: none;",
		"product: 1600 bytes per enrollment (club 1200, outbox 400; in indexes 200), $0.37 per million enrollments per month",
		"$0.26 for their recovery; 400 of those bytes are in items a time-to-live removes, and the rest, $0.28 a month,",
		"stays as long as the enrollments are kept; naive: not measured; the items without a time-to-live are",
		"| backlog when the surge ended | 600 mails above the steady 0 |",
		"| predicted drain (backlog ÷ (100 − 80)/s) | 30s |",
		"| api | 20.0 MiB |",
		"### function api (1.5 CPU s)",
		"| load generator | (part) | 0.6 | 0.20 |",
		"| function api | 4 | 6.0 | 2.00 |",
		"| all processes | 5 | 21.6 | 7.20 |",
		"![Backlog drain](benchmarks-drain.png)",
	} {
		require.Contains(t, text, want)
	}
	require.False(t, strings.Contains(text, dir), "no machine paths in the page")
	for _, f := range files[:len(files)-1] {
		fh, err := os.Open(f)
		require.NoError(t, err)
		img, err := png.Decode(fh)
		fh.Close()
		require.NoError(t, err, f)
		require.Greater(t, img.Bounds().Dx(), 300, f)
	}
}

func TestReportSummaryJudgesTargets(t *testing.T) {
	t.Parallel()
	r := sampleReport()
	text := r.Markdown()
	require.Contains(t, text, "| ≥ 300 enrollments/s for 10s, end-to-end p99 ≤ 2s, zero loss and duplicates | 300/s, p99 96.0 ms, lost 0, duplicated 0 | met |")
	require.Contains(t, text, "measured 31s, predicted 30s (+3.3 %) | met |")

	// The last 201 a response time after the run: the rate is judged in
	// whole enrollments per second, as shown.
	r.Throughput.Span = 10*time.Second + 15*time.Millisecond
	require.Contains(t, r.Markdown(), "| 300/s, p99 96.0 ms, lost 0, duplicated 0 | met |")
	r.Throughput.Span = 10*time.Second + 500*time.Millisecond // the API fell behind
	require.Contains(t, r.Markdown(), "| 286/s, p99 96.0 ms, lost 0, duplicated 0 | **not met** |")
	r.Throughput.Span = 0

	r.Throughput.StatsTotal = 2999
	r.Drain.Measured = 40 * time.Second
	text = r.Markdown()
	require.Contains(t, text, "lost 1, duplicated 0 | **not met** |")
	require.Contains(t, text, "(+33.3 %) | **not met** |")
	require.False(t, math.IsNaN(r.Drain.Error()))
}

func TestPhasedPacerFollowsEachPhaseThenStops(t *testing.T) {
	t.Parallel()
	p := phasedPacer{{rate: 100, until: time.Second}, {rate: 10, until: 3 * time.Second}}
	require.InDelta(t, 100, p.Rate(500*time.Millisecond), 0)
	require.InDelta(t, 10, p.Rate(2*time.Second), 0)

	wait, stop := p.Pace(500*time.Millisecond, 10) // 50 due by now
	require.False(t, stop)
	require.Zero(t, wait, "behind schedule: send at once")
	wait, _ = p.Pace(500*time.Millisecond, 50) // on schedule: the next one is due in 10 ms
	require.Equal(t, 10*time.Millisecond, wait)
	wait, _ = p.Pace(2*time.Second, 110) // 100 + 10 due by now
	require.Equal(t, 100*time.Millisecond, wait, "the second phase's pace")
	wait, stop = p.Pace(3*time.Second, 119) // the last phase includes its end
	require.False(t, stop)
	require.Zero(t, wait)
	_, stop = p.Pace(3*time.Second+time.Millisecond, 120)
	require.True(t, stop)
}

// TestReportSaysWhatTheCostTargetWouldTake: when ×0.70 of the naive design
// is above the cost both designs share, §3 gives the product's floor: with
// what it cannot drop as measured, and with only the write units that keep
// its promises.
func TestReportSaysWhatTheCostTargetWouldTake(t *testing.T) {
	t.Parallel()
	variant := func(name string, writeUnits, transactUnits float64, sqsBilled int64) bench.RequestVariant {
		return bench.RequestVariant{Name: name, Enrollments: 1000, Units: []bench.UnitCount{
			{Service: "dynamodb", Operation: "TransactWriteItems", Requests: 1000, WriteUnits: transactUnits, Items: 5000, TransactionItems: 5000},
			{Service: "dynamodb", Operation: "UpdateItem", Requests: 1000, WriteUnits: writeUnits - transactUnits, Items: 1000},
			{Service: "sqs", Operation: "ReceiveMessage", Requests: sqsBilled, Billed: sqsBilled},
		}}
	}
	// Product: 16 write units an enrollment ($10.00), SQS $0.40, the HTTP
	// API $1.00: $11.40. Naive: 24 write units and the HTTP API: $16.00.
	r := &bench.Report{Requests: &bench.RequestsResult{Rate: 100, Variants: []bench.RequestVariant{
		variant("product", 16000, 12000, 1000), variant("naive", 24000, 10000, 0),
	}}}
	text := r.Markdown()
	require.Contains(t, text, "product ÷ naive: **×0.71**")
	// Shared $9.75; kept write units 4 × $0.625 = $2.50, plus SQS $0.40.
	require.Contains(t, text, "Lambda and logs as measured: $2.90/M, so at best ×0.79 of the naive design; with SQS, SNS, Lambda and logs\n"+
		"free, those write units alone would leave it at ×0.77.")
}
