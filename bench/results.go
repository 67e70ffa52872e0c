package bench

import (
	"math"
	"slices"
	"sort"
	"time"
)

// Report is everything one `make bench` run measured.
type Report struct {
	Machine Machine
	Command string
	// DataKept says the product stack kept its data in a state directory,
	// as make run does (-club.persist), instead of in memory.
	DataKept bool
	Started  time.Time
	Finished time.Time

	Latency    *LatencyResult
	Throughput *ThroughputResult
	Requests   *RequestsResult
	Drain      *DrainResult
	Outage     *OutageResult
	Functions  []FunctionResult
	Profiles   []ProfileSummary
}

// Machine describes where the numbers come from.
type Machine struct {
	CPU       string
	Cores     int
	MemoryGiB float64
	OS        string
	GoVersion string
	// LoadBefore and LoadAfter are the 1-minute load averages when the run
	// started and ended: the machine is shared, and its other work shows.
	LoadBefore, LoadAfter float64
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of samples by the
// nearest-rank method: the smallest sample with at least p % of the samples
// at or below it. It returns 0 for no samples and does not modify samples.
func Percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// Distribution summarises latency samples.
type Distribution struct {
	N             int
	P50, P99, Max time.Duration
}

// Summarize computes the distribution of samples.
func Summarize(samples []time.Duration) Distribution {
	d := Distribution{N: len(samples), P50: Percentile(samples, 50), P99: Percentile(samples, 99)}
	for _, s := range samples {
		d.Max = max(d.Max, s)
	}
	return d
}

// Ratio is a/b, or 0 when b is 0.
func Ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// LatencyResult is benchmark 1: enrollment latency as the mail provider
// slows down, for the product (asynchronous) design and the synchronous
// baseline.
type LatencyResult struct {
	Rate     float64       // requests per second in each phase
	Duration time.Duration // of each phase
	Phases   []LatencyPhase
}

// LatencyPhase is one variant at one mail latency.
type LatencyPhase struct {
	Variant       string // VariantAsync or VariantSync
	MailLatencyMS int
	Sent          int
	Created       int // 201 answers
	Samples       []time.Duration
}

// The variants of the latency benchmark.
const (
	VariantAsync = "product API (outbox)"
	VariantSync  = "sync baseline (mail inside the request)"
)

// Phase returns the phase of variant at mail latency ms, or nil.
func (r *LatencyResult) Phase(variant string, ms int) *LatencyPhase {
	for i := range r.Phases {
		if r.Phases[i].Variant == variant && r.Phases[i].MailLatencyMS == ms {
			return &r.Phases[i]
		}
	}
	return nil
}

// Ratios returns the p50 and p99 ratios of variant's slow phase over its
// fast phase (0 when either is missing).
func (r *LatencyResult) Ratios(variant string, fastMS, slowMS int) (p50, p99 float64) {
	fast, slow := r.Phase(variant, fastMS), r.Phase(variant, slowMS)
	if fast == nil || slow == nil {
		return 0, 0
	}
	f, s := Summarize(fast.Samples), Summarize(slow.Samples)
	return Ratio(s.P50, f.P50), Ratio(s.P99, f.P99)
}

// ThroughputResult is benchmark 2: sustained load through the whole
// pipeline, with every effect counted afterwards.
type ThroughputResult struct {
	TargetRate float64
	Duration   time.Duration
	Sent       int
	Created    int // 201 answers
	Failed     int // anything else, including transport errors
	API        []time.Duration
	// EndToEnd is, per enrollment, from its 201 to the mail's accepted_at.
	EndToEnd []time.Duration
	// Span is from the first request to the last 201: longer than
	// Duration when the API falls behind the arrivals.
	Span time.Duration
	// Settled is how long after the last request the last effect appeared.
	Settled time.Duration
	// CPU is the CPU time each process used from the first request until
	// every effect had appeared: the benchmark process split into its load
	// generator and the rest, then each function's processes summed.
	CPU []ProcessCPU

	// MaxInFlight is how many requests the load generator holds open at
	// most (0: no bound): past it, arrivals wait for an answer and are sent
	// late. Every one of TargetRate × Duration is sent.
	MaxInFlight int

	// Committed are the enrollments committed in the run's classes (their
	// member items), answered 201 or not: above Created when the load
	// generator gave up on requests whose transaction had committed (an
	// overloaded run). 0 when not counted.
	Committed int

	// The effects, counted after the pipeline settled. The outbox rows and
	// mails are counted for the enrollments answered 201 and must equal
	// Created; the roster and the counters are read per class and must equal
	// Committed, for "zero loss, zero duplicates".
	OutboxRows      int
	OutboxPublished int
	Mails           int // distinct enrollments with a mail
	MailsTotal      int // messages the provider stored for this run
	RosterEntries   int
	StatsTotal      int
	DeadLetters     int // messages in the consumers' DLQs after the run

	Ops         []OpCount
	Invocations map[string]int64
	// Timeline counts 201s and mails per second of the run, for the plot.
	Timeline []TimelinePoint
}

// TimelinePoint is one second of a run.
type TimelinePoint struct {
	Second   int
	Enrolled int
	Mailed   int
}

// AchievedRate is the rate at which enrollments were answered 201: over
// the run, or over the span to the last 201 if that is longer.
func (r *ThroughputResult) AchievedRate() float64 {
	d := max(r.Duration, r.Span)
	if d <= 0 {
		return 0
	}
	return float64(r.Created) / d.Seconds()
}

// Lost and Duplicated compare each counted effect with the enrollments it
// belongs to (the 201s, or every committed one for the read models); all
// zero is the claim "zero loss, zero duplicate effects".
func (r *ThroughputResult) Lost() int {
	lost := 0
	for _, n := range []int{r.OutboxPublished, r.Mails} {
		lost += max(r.Created-n, 0)
	}
	for _, n := range []int{r.RosterEntries, r.StatsTotal} {
		lost += max(r.committed()-n, 0)
	}
	if r.Committed > 0 {
		lost += max(r.Created-r.Committed, 0) // a 201 without its commit
	}
	return lost
}

// Duplicated counts effects beyond one per enrollment.
func (r *ThroughputResult) Duplicated() int {
	dup := max(r.MailsTotal-r.Mails, 0) + max(r.OutboxRows-r.Created, 0)
	for _, n := range []int{r.RosterEntries, r.StatsTotal} {
		dup += max(n-r.committed(), 0)
	}
	return dup
}

// Unanswered are the enrollments committed whose request got no 201: the
// load generator gave up on it (its timeout, or its file descriptors ran
// out) after the transaction committed. Not a loss: their effects are
// counted against Committed.
func (r *ThroughputResult) Unanswered() int { return max(r.Committed-r.Created, 0) }

func (r *ThroughputResult) committed() int { return max(r.Committed, r.Created) }

// OpCount is one row of the local cloud's request counter.
type OpCount struct {
	Service   string `json:"service"`
	Operation string `json:"operation"`
	Count     int64  `json:"count"`
}

// UnitCount is one row of the local cloud's billing meter (package
// localcloud/internal/billing): what one operation was billed.
type UnitCount struct {
	Service          string  `json:"service"`
	Operation        string  `json:"operation"`
	Requests         int64   `json:"requests"`
	WriteUnits       float64 `json:"write_units"`
	IndexWriteUnits  float64 `json:"index_write_units"`
	ReadUnits        float64 `json:"read_units"`
	Items            int64   `json:"items"`
	TransactionItems int64   `json:"transaction_items"`
	Billed           int64   `json:"billed"`
}

// FunctionUse is what a function's invocations in a run are billed by: the
// sum of their durations, each rounded up to 1 ms, and the memory size; and
// the log lines they wrote (what CloudWatch Logs ingests), with their bytes.
type FunctionUse struct {
	BilledMs  int64
	MemoryMB  int
	LogEvents int64
	LogBytes  int64
}

// RequestsResult is benchmark 3: AWS requests per enrollment, by operation,
// for the product design and the naive one.
type RequestsResult struct {
	Rate     float64
	Variants []RequestVariant
}

// RequestVariant is one design measured end to end.
type RequestVariant struct {
	Name        string
	Description string
	Enrollments int
	Ops         []OpCount
	// Invocations are Lambda invocations by function (the local cloud
	// makes them in-process, so the request counter does not see them;
	// AWS bills them).
	Invocations map[string]int64
	// Units are what AWS bills for the requests, counted by the local
	// cloud's endpoint per request and item (GET /_club/units).
	Units []UnitCount
	// Functions are the billed durations and memory sizes of the functions
	// invoked, from the local cloud's runtime (/_club/stats).
	Functions map[string]FunctionUse
	// Stored is what the run added to each table, as DynamoDB bills
	// storage: GET /_club/storage after the run less before it.
	Stored []StoredTable
	// RosterEntries and StatsTotal are the effects counted afterwards;
	// each should equal Enrollments.
	RosterEntries, StatsTotal int
	// API and EndToEnd are the latencies at this rate: the 201, and from
	// the 201 to the mail's accepted_at.
	API, EndToEnd []time.Duration
}

// StoredTable is what a table stores as DynamoDB bills storage (the local
// cloud's GET /_club/storage): each item's size and each global secondary
// index entry's projection, plus 100 bytes each; Expiring* are the items
// that carry the table's time-to-live attribute, with their index entries.
type StoredTable struct {
	Table         string `json:"table"`
	Items         int64  `json:"items"`
	Bytes         int64  `json:"bytes"`
	IndexItems    int64  `json:"index_items"`
	IndexBytes    int64  `json:"index_bytes"`
	ExpiringItems int64  `json:"expiring_items"`
	ExpiringBytes int64  `json:"expiring_bytes"`
}

// StoredSince is what each table of after holds beyond what it held in
// before (tables that did not grow are left out).
func StoredSince(before, after []StoredTable) []StoredTable {
	was := map[string]StoredTable{}
	for _, t := range before {
		was[t.Table] = t
	}
	var out []StoredTable
	for _, t := range after {
		b := was[t.Table]
		d := StoredTable{
			Table: t.Table, Items: t.Items - b.Items, Bytes: t.Bytes - b.Bytes,
			IndexItems: t.IndexItems - b.IndexItems, IndexBytes: t.IndexBytes - b.IndexBytes,
			ExpiringItems: t.ExpiringItems - b.ExpiringItems, ExpiringBytes: t.ExpiringBytes - b.ExpiringBytes,
		}
		if d.Bytes != 0 || d.IndexBytes != 0 {
			out = append(out, d)
		}
	}
	return out
}

// PerEnrollment is the variant's AWS requests per enrollment.
func (v RequestVariant) PerEnrollment() float64 {
	var n int64
	for _, op := range v.Ops {
		n += op.Count
	}
	return perEnrollment(float64(n), v.Enrollments)
}

// InvocationsPerEnrollment is the variant's Lambda invocations per enrollment.
func (v RequestVariant) InvocationsPerEnrollment() float64 {
	var n int64
	for _, c := range v.Invocations {
		n += c
	}
	return perEnrollment(float64(n), v.Enrollments)
}

// DrainResult is benchmark 4: a backlog drained while arrivals continue,
// against docs/principles.md §1.8's model.
type DrainResult struct {
	ProviderRate float64 // mails per second the provider accepts
	ArrivalRate  float64 // enrollments per second during the drain
	SurgeRate    float64 // enrollments per second while the backlog builds
	Surge        time.Duration
	Backlog      int // queued mails when the surge ended, above Steady
	// Steady is the backlog the arrivals keep in flight once drained; the
	// drain ends when the backlog is back at it for good.
	Steady      int
	Measured    time.Duration
	Enrollments int
	Mails       int
	DeadLetters int
	Curve       []BacklogPoint
}

// BacklogPoint is the backlog at time T after the surge ended (negative T:
// during the surge).
type BacklogPoint struct {
	T       time.Duration
	Backlog int
}

// PredictDrain is docs/principles.md §1.8's capacity model: a backlog shrinks at the
// provider's rate minus the arrival rate. It returns false when it never
// drains (arrival ≥ provider).
func PredictDrain(backlog int, arrival, provider float64) (time.Duration, bool) {
	if provider <= arrival {
		return 0, false
	}
	return time.Duration(float64(backlog) / (provider - arrival) * float64(time.Second)), true
}

// Predicted is the model's drain time for the measured backlog.
func (r *DrainResult) Predicted() time.Duration {
	d, _ := PredictDrain(r.Backlog, r.ArrivalRate, r.ProviderRate)
	return d
}

// Error is (measured − predicted) / predicted.
func (r *DrainResult) Error() float64 {
	p := r.Predicted()
	if p == 0 {
		return 0
	}
	return float64(r.Measured-p) / float64(p)
}

// BacklogCurve turns arrival and completion instants into the backlog
// (arrived − completed) at every step from start to end, relative to zero.
func BacklogCurve(arrivals, completions []time.Time, zero, start, end time.Time, step time.Duration) []BacklogPoint {
	a, c := sortedTimes(arrivals), sortedTimes(completions)
	var out []BacklogPoint
	for t := start; !t.After(end); t = t.Add(step) {
		n := countAtOrBefore(a, t) - countAtOrBefore(c, t)
		out = append(out, BacklogPoint{T: t.Sub(zero), Backlog: n})
	}
	return out
}

// DrainEnd is the first point at or after zero (T ≥ 0) from which the
// backlog stays at or below level for the rest of the curve; false if it
// never does.
func DrainEnd(curve []BacklogPoint, level int) (time.Duration, bool) {
	end, found := time.Duration(0), false
	for i := len(curve) - 1; i >= 0 && curve[i].T >= 0; i-- {
		if curve[i].Backlog > level {
			break
		}
		end, found = curve[i].T, true
	}
	return end, found
}

func sortedTimes(ts []time.Time) []time.Time {
	s := slices.Clone(ts)
	slices.SortFunc(s, func(a, b time.Time) int { return a.Compare(b) })
	return s
}

func countAtOrBefore(sorted []time.Time, t time.Time) int {
	return sort.Search(len(sorted), func(i int) bool { return sorted[i].After(t) })
}

// FunctionResult is benchmark 5 for one function.
type FunctionResult struct {
	Name      string
	SizeBytes int64
	// StartToFirstPoll: from exec to the process's first request for an
	// invocation on the Runtime API, over several starts.
	StartToFirstPoll []time.Duration
}

// ProcessCPU is the CPU time (user and system) of one part of the stack
// during the throughput run.
type ProcessCPU struct {
	Component string
	Processes int
	Seconds   float64
}

// CPUPerThousand is the CPU seconds c used per 1,000 enrollments created
// (0 when none was).
func (t *ThroughputResult) CPUPerThousand(c ProcessCPU) float64 {
	if t.Created == 0 {
		return 0
	}
	return c.Seconds / float64(t.Created) * 1000
}

// CPUTotal is the CPU time of every part together.
func (t *ThroughputResult) CPUTotal() ProcessCPU {
	total := ProcessCPU{Component: "all processes"}
	for _, c := range t.CPU {
		if c.Processes > 0 {
			total.Processes += c.Processes
		}
		total.Seconds += c.Seconds
	}
	return total
}

// ProfileSummary is the top of a CPU profile.
type ProfileSummary struct {
	Component string
	Seconds   float64 // profiled CPU seconds
	Top       string  // pprof -top output, trimmed
}

// OutageResult is benchmark 6: the mail provider down for Outage while
// Mails confirmations are pending, then back.
type OutageResult struct {
	Mails  int
	Outage time.Duration
	// ProviderRate is the provider's rate limit after recovery (mails/s);
	// BackoffCap and ProbeInterval are the notifier's settings.
	ProviderRate  float64
	BackoffCap    time.Duration
	ProbeInterval time.Duration
	// ProviderCalls reached the provider during the outage (every one
	// failed); Attempts are the notifier's attempts in the same time.
	ProviderCalls int
	Attempts      int
	// Drain is from the provider's recovery to the last pending mail's
	// acceptance; Sent, Duplicates and DeadLetters count the outcome.
	Drain       time.Duration
	Sent        int
	Duplicates  int
	DeadLetters int
}

// CallsPerMailMinute is the provider requests per pending mail per minute
// of outage.
func (o *OutageResult) CallsPerMailMinute() float64 {
	if o.Mails == 0 || o.Outage <= 0 {
		return 0
	}
	return float64(o.ProviderCalls) / float64(o.Mails) / o.Outage.Minutes()
}

// Predicted is the drain the capacity model (benchmark 4: backlog ÷ (rate −
// arrival), no arrivals here) predicts once pending mail can reach the
// provider: a probe notices the recovery within ProbeInterval, and every
// pending mail comes back within BackoffCap, so the backlog is spread over
// the cap unless the provider's rate is the narrower pipe.
func (o *OutageResult) Predicted() time.Duration {
	byRate := time.Duration(float64(o.Mails) / o.ProviderRate * float64(time.Second))
	return o.ProbeInterval + max(o.BackoffCap, byRate)
}
