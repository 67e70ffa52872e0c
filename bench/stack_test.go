package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/clubdev/club/bench"
	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/internal/stackfile"
	"github.com/clubdev/club/localcloud"
	"github.com/clubdev/club/localcloud/issuer"
)

// stack is a running local cloud and the clients the benchmarks use on it.
type stack struct {
	cloud  *localcloud.Cloud
	dir    string
	file   *stackfile.Stack
	issuer *issuer.Issuer
	aws    aws.Config
	sqs    *sqs.Client
	ddb    *dynamodb.Client
	http   *http.Client
	// teacher owns every class the benchmarks create.
	teacher user
}

// runID keeps ids of one run apart.
var runID = strconv.FormatInt(time.Now().UnixNano()&0xffffff, 36)

var seq atomic.Int64

func newID(prefix string) string { return fmt.Sprintf("%s-%s-%d", prefix, runID, seq.Add(1)) }

func newStack(cloud *localcloud.Cloud, dir string) (*stack, error) {
	f, err := stackfile.Load(cloud.StackFile())
	if err != nil {
		return nil, err
	}
	key, err := issuer.LoadKey(f.IssuerKeyPath(cloud.StackFile()))
	if err != nil {
		return nil, err
	}
	iss, err := issuer.New(f.IssuerURL, key)
	if err != nil {
		return nil, err
	}
	cfg := localcloud.AWSConfig(f.Endpoint)
	s := &stack{
		cloud: cloud, dir: dir, file: f, issuer: iss, aws: cfg,
		sqs: sqs.NewFromConfig(cfg), ddb: dynamodb.NewFromConfig(cfg),
		http: &http.Client{Timeout: time.Minute},
	}
	if s.teacher, err = s.newUser("teacher"); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *stack) close() error {
	err := s.cloud.Close()
	os.RemoveAll(s.dir)
	return err
}

// user is a caller of the HTTP API with a signed token.
type user struct {
	sub, email, token string
}

func (s *stack) newUser(role string) (user, error) {
	sub := newID(role)
	u := user{sub: sub, email: sub + "@example.com"}
	tok, err := s.issuer.Sign(issuer.Claims{
		Subject: sub, Audience: s.file.JWTAudience, Email: u.email, Groups: []string{role},
	}, 3*time.Hour)
	u.token = tok
	return u, err
}

func (s *stack) students(tb testing.TB, n int) []user {
	tb.Helper()
	out := make([]user, n)
	for i := range out {
		u, err := s.newUser("student")
		require.NoError(tb, err)
		out[i] = u
	}
	return out
}

// classes creates n classes of the teacher with room for everyone.
func (s *stack) classes(tb testing.TB, n int) []string {
	tb.Helper()
	ids := make([]string, n)
	for i := range ids {
		var out struct {
			ClassID string `json:"class_id"`
		}
		status := s.api(tb, s.teacher, http.MethodPost, "/classes", map[string]any{
			"title": "Benchmark class", "capacity": 10000,
			"starts_at": time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339),
		}, &out)
		require.Equal(tb, http.StatusCreated, status)
		ids[i] = out.ClassID
	}
	return ids
}

// api calls the HTTP API as u and decodes a JSON answer into out.
func (s *stack) api(tb testing.TB, u user, method, path string, body, out any) int {
	tb.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(tb, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.file.APIURL+path, rd)
	require.NoError(tb, err)
	req.Header.Set("Authorization", "Bearer "+u.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	if out != nil {
		require.NoError(tb, json.NewDecoder(resp.Body).Decode(out), "%s %s", method, path)
	}
	return resp.StatusCode
}

// call sends a JSON request to base+path and decodes the answer into out;
// it fails on a status of 300 or more.
func (s *stack) call(tb testing.TB, method, url string, body, out any) {
	tb.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(tb, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(tb, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(tb, err)
	require.Less(tb, resp.StatusCode, 300, "%s %s: %s", method, url, raw)
	if out != nil {
		require.NoError(tb, json.Unmarshal(raw, out))
	}
}

// ---------------------------------------------------------------- mail sandbox

func (s *stack) mailFaults(tb testing.TB, faults map[string]any) {
	s.call(tb, http.MethodPost, s.file.MailURL+"/_sandbox/faults", faults, nil)
}

func (s *stack) mailRate(tb testing.TB, perSecond float64) {
	s.call(tb, http.MethodPost, s.file.MailURL+"/_sandbox/config", map[string]any{"rate_per_second": perSecond}, nil)
}

func (s *stack) mailReset(tb testing.TB) {
	s.call(tb, http.MethodPost, s.file.MailURL+"/_sandbox/reset", nil, nil)
}

type mailStats struct {
	Accepted    int `json:"accepted"`
	Duplicates  int `json:"duplicates"`
	RateLimited int `json:"rate_limited"`
}

func (s *stack) mailStats(tb testing.TB) mailStats {
	var st mailStats
	s.call(tb, http.MethodGet, s.file.MailURL+"/_sandbox/stats", nil, &st)
	return st
}

type mailMessage struct {
	MessageID      string    `json:"message_id"`
	To             string    `json:"to"`
	Text           string    `json:"text"`
	IdempotencyKey string    `json:"idempotency_key"`
	AcceptedAt     time.Time `json:"accepted_at"`
}

func (s *stack) mailMessages(tb testing.TB) []mailMessage {
	var out struct {
		Messages []mailMessage `json:"messages"`
	}
	s.call(tb, http.MethodGet, s.file.MailURL+"/v1/messages", nil, &out)
	return out.Messages
}

// ---------------------------------------------------------------- local cloud

func (s *stack) resetRequests(tb testing.TB) {
	s.call(tb, http.MethodDelete, s.file.Endpoint+"/_club/requests", nil, nil)
}

func (s *stack) requests(tb testing.TB) []bench.OpCount {
	var out struct {
		Requests []bench.OpCount `json:"requests"`
	}
	s.call(tb, http.MethodGet, s.file.Endpoint+"/_club/requests", nil, &out)
	return out.Requests
}

type functionStats struct {
	Invocations int64
	BilledMs    int64
	MemoryMB    int
	LogEvents   int64
	LogBytes    int64
	PIDs        []int
}

// meter switches the local cloud's billing meter on or off (and resets
// it): off, it costs the other benchmarks nothing.
func (s *stack) meter(tb testing.TB, on bool) {
	s.call(tb, http.MethodPut, s.file.Endpoint+"/_club/units", map[string]bool{"enabled": on}, nil)
}

// storage reads what each table stores (GET /_club/storage).
func (s *stack) storage(tb testing.TB) []bench.StoredTable {
	var out struct {
		Tables []bench.StoredTable `json:"tables"`
	}
	s.call(tb, http.MethodGet, s.file.Endpoint+"/_club/storage", nil, &out)
	require.NotEmpty(tb, out.Tables, "the local cloud lists its tables' storage")
	return out.Tables
}

// units reads the billing meter, leaving out what only the benchmark asked.
func (s *stack) units(tb testing.TB) []bench.UnitCount {
	var out struct {
		Units []bench.UnitCount `json:"units"`
	}
	s.call(tb, http.MethodGet, s.file.Endpoint+"/_club/units", nil, &out)
	kept := out.Units[:0]
	for _, u := range out.Units {
		if !pipelineIgnores[u.Service+" "+u.Operation] {
			kept = append(kept, u)
		}
	}
	return kept
}

// functionUse is what each function was billed, and the log lines it
// wrote, between two snapshots of its stats.
func functionUse(before, after map[string]functionStats) map[string]bench.FunctionUse {
	out := map[string]bench.FunctionUse{}
	for name, st := range after {
		u := bench.FunctionUse{
			BilledMs:  st.BilledMs - before[name].BilledMs,
			MemoryMB:  st.MemoryMB,
			LogEvents: st.LogEvents - before[name].LogEvents,
			LogBytes:  st.LogBytes - before[name].LogBytes,
		}
		if u.BilledMs > 0 || u.LogEvents > 0 {
			out[name] = u
		}
	}
	return out
}

func (s *stack) functionStats(tb testing.TB) map[string]functionStats {
	var out struct {
		Functions map[string]functionStats `json:"functions"`
	}
	s.call(tb, http.MethodGet, s.file.Endpoint+"/_club/stats", nil, &out)
	return out.Functions
}

func (s *stack) invocations(tb testing.TB) map[string]int64 {
	return invocationCounts(s.functionStats(tb))
}

func invocationCounts(stats map[string]functionStats) map[string]int64 {
	out := map[string]int64{}
	for name, st := range stats {
		out[name] = st.Invocations
	}
	return out
}

// invocationsSince is the per-function difference of two snapshots.
func invocationsSince(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for name, n := range after {
		if d := n - before[name]; d > 0 {
			out[name] = d
		}
	}
	return out
}

var consumerQueues = []string{"NotificationsQueue", "AnalyticsQueue", "RosterQueue"}
var deadLetterQueues = []string{"NotificationsDLQ", "AnalyticsDLQ", "RosterDLQ", "RelayFailuresQueue"}

// queued is what the queues hold, visible, in flight or delayed (a retry
// of the notifier is a delayed copy).
func (s *stack) queued(tb testing.TB, queues ...string) int {
	total := 0
	for _, q := range queues {
		out, err := s.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(s.file.Queues[q]),
			AttributeNames: []sqstypes.QueueAttributeName{
				sqstypes.QueueAttributeNameApproximateNumberOfMessages,
				sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
				sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
			},
		})
		require.NoError(tb, err)
		for _, v := range out.Attributes {
			n, _ := strconv.Atoi(v)
			total += n
		}
	}
	return total
}

// queueDepths is what each consumer queue holds.
func (s *stack) queueDepths(tb testing.TB) map[string]int {
	out := map[string]int{}
	for _, q := range consumerQueues {
		out[q] = s.queued(tb, q)
	}
	return out
}

// waitIdle waits until the consumer queues are empty.
func (s *stack) waitIdle(tb testing.TB, within time.Duration) {
	tb.Helper()
	eventually(tb, within, "consumer queues drained", func() bool {
		n := s.queued(tb, consumerQueues...)
		if n > 0 && time.Now().Second()%20 == 0 && time.Now().Nanosecond() < 100e6 {
			tb.Logf("waiting for the queues: %d messages; %v", n, s.queueDepths(tb))
		}
		return n == 0
	})
}

// eventually polls cond until it holds, failing after within.
func eventually(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	within = patience.Within(within)
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// outboxRows counts the outbox rows of the given aggregates and how many of
// them are marked published.
func (s *stack) outboxRows(tb testing.TB, aggregates map[string]bool) (rows, published int) {
	p := dynamodb.NewScanPaginator(s.ddb, &dynamodb.ScanInput{TableName: aws.String(s.file.Tables["OutboxTable"])})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		require.NoError(tb, err)
		for _, item := range page.Items {
			agg, _ := item["aggregate_id"].(*ddbtypes.AttributeValueMemberS)
			if agg == nil || !aggregates[agg.Value] {
				continue
			}
			rows++
			if st, _ := item["status"].(*ddbtypes.AttributeValueMemberS); st != nil && st.Value == "published" {
				published++
			}
		}
	}
	return rows, published
}

// committed counts the enrollments committed in classes, answered 201 or
// not: their member items (one per student holding a seat), read from the
// club table.
func (s *stack) committed(tb testing.TB, classes []string) int {
	n := 0
	for _, c := range classes {
		p := dynamodb.NewQueryPaginator(s.ddb, &dynamodb.QueryInput{
			TableName:              aws.String(s.file.Tables["ClubTable"]),
			KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :member)"),
			ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
				":pk": &ddbtypes.AttributeValueMemberS{Value: "CLASS#" + c}, ":member": &ddbtypes.AttributeValueMemberS{Value: "MEMBER#"},
			},
			Select:         ddbtypes.SelectCount,
			ConsistentRead: aws.Bool(true),
		})
		for p.HasMorePages() {
			page, err := p.NextPage(context.Background())
			require.NoError(tb, err)
			n += int(page.Count)
		}
	}
	return n
}

// effects reads the read models of classes through the API: roster entries
// and the analytics total, summed.
func (s *stack) effects(tb testing.TB, classes []string) (roster, total int) {
	for _, c := range classes {
		var r struct {
			Students []json.RawMessage `json:"students"`
		}
		require.Equal(tb, http.StatusOK, s.api(tb, s.teacher, http.MethodGet, "/classes/"+c+"/roster", nil, &r))
		roster += len(r.Students)
		var st struct {
			EnrollmentsTotal int `json:"enrollments_total"`
		}
		require.Equal(tb, http.StatusOK, s.api(tb, s.teacher, http.MethodGet, "/classes/"+c+"/stats", nil, &st))
		total += st.EnrollmentsTotal
	}
	return roster, total
}

// ---------------------------------------------------------------- load

// enrollments generates enrollment requests: every (student, class) pair at
// most once, spread over the classes.
type enrollments struct {
	base     string
	students []user
	classes  []string
	next     atomic.Int64
}

func (s *stack) enrollments(students []user, classes []string) *enrollments {
	return &enrollments{base: s.file.APIURL, students: students, classes: classes}
}

// targeter returns vegeta targets against base (the product API, or another
// server that takes the same requests).
func (e *enrollments) targeter(base string) vegeta.Targeter {
	return func(t *vegeta.Target) error {
		i := int(e.next.Add(1) - 1)
		if i >= len(e.students)*len(e.classes) {
			return vegeta.ErrNoTargets
		}
		class := e.classes[i%len(e.classes)]
		st := e.students[(i/len(e.classes))%len(e.students)]
		t.Method = http.MethodPost
		t.URL = base + "/classes/" + class + "/enrollments"
		t.Header = http.Header{
			"Authorization":   {"Bearer " + st.token},
			"Idempotency-Key": {fmt.Sprintf("bench-%s-%d", runID, seq.Add(1))},
			// The synchronous baseline has no authorizer in front of it.
			"X-Student-Id":    {st.sub},
			"X-Student-Email": {st.email},
		}
		return nil
	}
}

// attack runs an open-loop attack of every arrival pacer schedules in d and
// returns every result.
func attack(tr vegeta.Targeter, pacer vegeta.Pacer, d time.Duration) []*vegeta.Result {
	// A long timeout: a request the client abandons may still commit (its
	// effects are then counted against the committed enrollments, see
	// bench.ThroughputResult.Committed). At most maxInFlight requests at
	// once: past that the arrivals wait for a worker instead of opening
	// more connections. Unbounded, an overloaded run opened one connection
	// per late request until this process — which also serves the local
	// cloud — ran out of file descriptors, and then measured that instead
	// of the stack.
	atk := vegeta.NewAttacker(vegeta.Timeout(3*time.Minute), vegeta.Workers(32), vegeta.MaxWorkers(maxInFlight), vegeta.KeepAlive(true))
	var out []*vegeta.Result
	// No duration for vegeta: it stops at the clock, so an attack whose
	// pacer had fallen a few milliseconds behind (this process serves the
	// local cloud too, and at saturation it waits for a core like everything
	// else) dropped its last arrivals. They are sent late instead.
	for r := range atk.Attack(tr, scheduled{pacer, arrivals(pacer, d)}, 0, "bench") {
		out = append(out, r)
	}
	return out
}

// scheduled is a pacer that stops after n hits.
type scheduled struct {
	vegeta.Pacer
	n uint64
}

// Pace implements vegeta.Pacer.
func (p scheduled) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if hits >= p.n {
		return 0, true
	}
	return p.Pacer.Pace(elapsed, hits)
}

// arrivals is how many hits pacer schedules by d: the fewest hits after
// which, at d, it would wait (or stop) rather than send one more.
func arrivals(pacer vegeta.Pacer, d time.Duration) uint64 {
	return uint64(sort.Search(math.MaxInt32, func(hits int) bool {
		wait, stop := pacer.Pace(d, uint64(hits))
		return stop || wait > 0
	}))
}

// maxInFlight bounds the load generator's open requests: at 300/s it is
// ten seconds of answers late.
const maxInFlight = 3000

func constant(perSecond float64) vegeta.Pacer {
	return vegeta.ConstantPacer{Freq: int(perSecond), Per: time.Second}
}

// created is a 201 answer: the enrollment and when the answer arrived.
type created struct {
	enrollmentID string
	at           time.Time
	latency      time.Duration
}

// createdOf decodes the 201 answers; others are counted as failures.
func createdOf(results []*vegeta.Result) (ok []created, failed int, firstErr error) {
	for _, r := range results {
		if r.Code != http.StatusCreated {
			failed++
			if firstErr == nil {
				firstErr = fmt.Errorf("%d %s %s", r.Code, r.Error, bytes.TrimSpace(r.Body))
			}
			continue
		}
		var body struct {
			EnrollmentID string `json:"enrollment_id"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil || body.EnrollmentID == "" {
			failed++
			if firstErr == nil {
				firstErr = errors.Join(errors.New("201 without an enrollment_id"), err)
			}
			continue
		}
		ok = append(ok, created{enrollmentID: body.EnrollmentID, at: r.Timestamp.Add(r.Latency), latency: r.Latency})
	}
	return ok, failed, firstErr
}

// enrollmentOfMail is the enrollment a confirmation mail is about: its text
// ends with "Enrollment <id>.".
func enrollmentOfMail(m mailMessage) string {
	i := bytes.LastIndex([]byte(m.Text), []byte("Enrollment "))
	if i < 0 {
		return ""
	}
	return string(bytes.TrimSuffix(bytes.TrimSpace([]byte(m.Text[i+len("Enrollment "):])), []byte(".")))
}
