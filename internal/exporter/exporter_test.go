package exporter_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/operation"
	"github.com/clubdev/club/internal/club/projection"
	"github.com/clubdev/club/internal/exporter"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/sqsconsumer/sqsconsumertest"
	"github.com/clubdev/club/internal/store"
	"github.com/clubdev/club/localcloud/testkit"
)

// The engine the tests run on now (testkit: the package runs once on kumo
// and once on moto), shared by the test binary; each test has its own
// tables and bucket.
var (
	ddb      *dynamodb.Client
	s3Client *s3.Client
)

func TestMain(m *testing.M) {
	os.Exit(testkit.Run(m, func(url string) {
		creds := credentials.NewStaticCredentialsProvider("local", "local", "")
		ddb = dynamodb.New(dynamodb.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(url), Credentials: creds,
			// kumo's X-Amz-Crc32 does not match its body; the data is fine.
			DisableValidateResponseChecksum: true,
		})
		// Path-style, as functions/exporter addresses a custom endpoint.
		s3Client = s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(url), Credentials: creds, UsePathStyle: true})
	}))
}

var seq atomic.Int64

const (
	queueURL        = "https://sqs.local/exports"
	dlqURL          = "https://sqs.local/exports-dlq"
	maxReceiveCount = 3
)

// fixture is an Exporter and its Handler over DynamoDB and S3 (kumo), with
// a recording stand-in for the consumer's own SQS calls.
type fixture struct {
	t       *testing.T
	ctx     context.Context
	st      *store.Store
	ops     *store.Operations
	svc     *operation.Service
	bucket  string
	files   *flakyFiles
	sqs     *sqsconsumertest.SQS
	h       *exporter.Handler
	logs    *bytes.Buffer
	metrics *bytes.Buffer
}

func setup(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	n := seq.Add(1)
	cfg := store.Config{ClubTable: fmt.Sprintf("exp-club-%d", n), OutboxTable: fmt.Sprintf("exp-outbox-%d", n)}
	require.NoError(t, store.CreateTables(ctx, ddb, cfg))
	st, err := store.New(ddb, cfg)
	require.NoError(t, err)
	ops := st.Operations
	svc, err := operation.NewService(operation.Deps{Store: ops})
	require.NoError(t, err)
	name := fmt.Sprintf("exports-%d", n)
	_, err = s3Client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	require.NoError(t, err)
	bucket, err := exporter.NewBucket(s3Client, name)
	require.NoError(t, err)

	f := &fixture{t: t, ctx: ctx, st: st, ops: ops, svc: svc, bucket: name, files: &flakyFiles{next: bucket},
		sqs: &sqsconsumertest.SQS{}, logs: &bytes.Buffer{}, metrics: &bytes.Buffer{}}
	logger := obs.NewLogger(f.logs, obs.Options{Level: slog.LevelDebug, Function: "exporter"})
	e, err := exporter.New(exporter.Deps{
		Operations: ops, Classes: st.Classes, Rosters: st.Projections, Teachers: st.Projections, Files: f.files,
		URLExpiry: 2 * time.Second, Logger: logger, Metrics: f.metrics,
	})
	require.NoError(t, err)
	f.h, err = exporter.NewHandler(sqsconsumer.Config{QueueURL: queueURL, DLQURL: dlqURL, MaxReceiveCount: maxReceiveCount, Metrics: io.Discard},
		f.sqs, e, logger)
	require.NoError(t, err)
	return f
}

// flakyFiles fails every Put while failing is set, else passes through.
type flakyFiles struct {
	next    exporter.Files
	mu      sync.Mutex
	failing error
	puts    int
}

func (f *flakyFiles) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing = err
}

func (f *flakyFiles) putCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.puts
}

func (f *flakyFiles) Put(ctx context.Context, key string, body []byte, contentType, fileName string) error {
	f.mu.Lock()
	failing := f.failing
	f.puts++
	f.mu.Unlock()
	if failing != nil {
		return failing
	}
	return f.next.Put(ctx, key, body, contentType, fileName)
}

func (f *flakyFiles) URL(ctx context.Context, key string, ttl time.Duration) (string, error) {
	return f.next.URL(ctx, key, ttl)
}

// class creates a class of teacher-1 whose roster projection lists the
// students, enrolled a minute apart.
func (f *fixture) class(students ...string) string {
	f.t.Helper()
	c, err := class.New(events.NewID(), "teacher-1", "Queues", 100, time.Date(2026, 4, 1, 17, 0, 0, 0, time.UTC))
	require.NoError(f.t, err)
	require.NoError(f.t, f.st.Classes.Create(f.ctx, c))
	roster := projection.NewRosterProjector(f.st.Inbox)
	for i, s := range students {
		env, err := events.New(events.NewID(), time.Date(2026, 3, 1, 10, i, 0, 0, time.UTC), events.EnrollmentCreated{
			EnrollmentID: events.NewID(), ClassID: c.ID(), StudentID: s,
		})
		require.NoError(f.t, err)
		require.NoError(f.t, roster.Apply(f.ctx, env))
	}
	return c.ID()
}

// export requests an export and returns the operation and its job's
// envelope, as the relay would deliver it.
func (f *fixture) export(classID string) (operation.Operation, string) {
	f.t.Helper()
	op, err := f.svc.RequestRosterExport(f.ctx, operation.ExportRequest{ClassID: classID, RequestedBy: "teacher-1"})
	require.NoError(f.t, err)
	return op, f.job(op.ID())
}

// job returns the envelope of an operation's job, from the outbox.
func (f *fixture) job(operationID string) string {
	f.t.Helper()
	rows, err := f.st.Outbox.Unpublished(f.ctx, time.Now().Add(time.Hour), 100)
	require.NoError(f.t, err)
	for _, r := range rows {
		if r.AggregateID == operationID {
			return string(r.Payload)
		}
	}
	f.t.Fatalf("no job in the outbox for %s", operationID)
	return ""
}

// deliver hands one message to the handler as the receiveCount-th delivery
// and returns the ids it reports for retry.
func (f *fixture) deliver(messageID, body string, receiveCount int) []string {
	f.t.Helper()
	resp, err := f.h.Handle(f.ctx, sqsconsumertest.Event(sqsconsumertest.Record(messageID, body, receiveCount, time.Now(),
		map[string]string{"type": string(events.TypeExportRequested)})))
	require.NoError(f.t, err)
	return sqsconsumertest.FailedIDs(resp)
}

func (f *fixture) operation(id string) operation.Operation {
	f.t.Helper()
	op, err := f.ops.Get(f.ctx, id)
	require.NoError(f.t, err)
	return op
}

// objects lists the bucket's keys under exports/.
func (f *fixture) objects() []string {
	f.t.Helper()
	out, err := s3Client.ListObjectsV2(f.ctx, &s3.ListObjectsV2Input{Bucket: aws.String(f.bucket), Prefix: aws.String("exports/")})
	require.NoError(f.t, err)
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

func fetch(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// The export of a roster: running, then a CSV file whose rows are the
// roster's, behind a URL that works without credentials until it expires.
func TestExportWritesTheRosterAndPresignsAnExpiringURL(t *testing.T) {
	t.Parallel()
	f := setup(t)
	classID := f.class("s-1", "=s-2", "s-3")
	op, job := f.export(classID)
	require.Equal(t, operation.StatusPending, f.operation(op.ID()).Status())

	before := time.Now().Truncate(time.Second)
	require.Empty(t, f.deliver("m-1", job, 1), "acknowledged")
	after := time.Now()
	got := f.operation(op.ID())
	require.Equal(t, operation.StatusSucceeded, got.Status())
	var statuses []operation.Status
	for _, h := range got.History() {
		statuses = append(statuses, h.Status)
	}
	require.Equal(t, []operation.Status{operation.StatusPending, operation.StatusRunning, operation.StatusSucceeded}, statuses)
	res, _ := got.Result()
	require.Equal(t, 3, res.Rows)
	require.Equal(t, exporter.ObjectKey(op.ID()), res.ObjectKey)
	require.Equal(t, []string{"exports/" + op.ID() + ".csv"}, f.objects())
	// Two seconds from the moment it was signed, whenever in the delivery.
	require.False(t, res.ExpiresAt.Before(before.Add(2*time.Second)), "expires at %s", res.ExpiresAt)
	require.False(t, res.ExpiresAt.After(after.Add(2*time.Second)), "expires at %s", res.ExpiresAt)

	status, body := fetch(t, res.URL)
	require.Equal(t, http.StatusOK, status, body)
	records, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	require.NoError(t, err)
	require.Equal(t, [][]string{
		{"student_id", "enrolled_at"},
		{"s-1", "2026-03-01T10:00:00Z"},
		{"'=s-2", "2026-03-01T10:01:00Z"}, // a spreadsheet shows it, never runs it
		{"s-3", "2026-03-01T10:02:00Z"},
	}, records)

	require.Contains(t, f.metrics.String(), exporter.MetricExportsDone)
	if testkit.Engine() == "moto" {
		// moto checks neither the signature nor the expiry of a presigned
		// URL (the local cloud's front checks both before moto sees it; see
		// docs/local-cloud.md): what expires is kumo's and S3's to show.
		return
	}
	// The URL stops working once it has expired (kumo checks SigV4 query
	// authentication as S3 does).
	deadline := patience.Deadline()
	for status == http.StatusOK && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		status, _ = fetch(t, res.URL)
	}
	require.Equal(t, http.StatusForbidden, status)
	require.False(t, time.Now().Before(res.ExpiresAt), "refused no earlier than expires_at")
}

// A teacher's nightly report: one row per class of the teacher, in start
// order, with its seats and counters, behind the same kind of URL as a
// roster export; another teacher's classes are not in it.
func TestTeacherReportListsTheTeachersClassesWithTheirCounters(t *testing.T) {
	t.Parallel()
	f := setup(t)
	later := f.class("s-1", "s-2") // teacher-1's, starts 2026-04-01T17:00
	earlier, err := class.New(events.NewID(), "teacher-1", "=Queues, again", 3, time.Date(2026, 3, 20, 9, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	require.NoError(t, f.st.Classes.Create(f.ctx, earlier))
	others, err := class.New(events.NewID(), "teacher-2", "Not theirs", 3, time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	require.NoError(t, f.st.Classes.Create(f.ctx, others))
	stats := projection.NewStatsProjector(f.st.Inbox)
	for _, typ := range []events.Payload{
		events.EnrollmentCreated{EnrollmentID: "e-1", ClassID: later, StudentID: "s-1"},
		events.EnrollmentCreated{EnrollmentID: "e-2", ClassID: later, StudentID: "s-2"},
		events.EnrollmentCreated{EnrollmentID: "e-3", ClassID: later, StudentID: "s-3"},
		events.EnrollmentCancelled{EnrollmentID: "e-3", ClassID: later, StudentID: "s-3"},
	} {
		env, err := events.New(events.NewID(), time.Now(), typ)
		require.NoError(t, err)
		require.NoError(t, stats.Apply(f.ctx, env))
	}

	id, created, err := f.svc.RequestTeacherReport(f.ctx, "teacher-1", time.Date(2026, 3, 5, 2, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	require.True(t, created)
	require.Empty(t, f.deliver("m-1", f.job(id), 1), "acknowledged")

	got := f.operation(id)
	require.Equal(t, operation.StatusSucceeded, got.Status())
	res, _ := got.Result()
	require.Equal(t, 2, res.Rows)
	require.Equal(t, []string{exporter.ObjectKey(id)}, f.objects())
	status, body := fetch(t, res.URL)
	require.Equal(t, http.StatusOK, status, body)
	records, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	require.NoError(t, err)
	require.Equal(t, [][]string{
		{"class_id", "title", "starts_at", "seats_taken", "capacity", "enrollments_total", "cancellations_total"},
		{earlier.ID(), "'=Queues, again", "2026-03-20T09:00:00Z", "0", "3", "0", "0"},
		{later, "Queues", "2026-04-01T17:00:00Z", "0", "100", "3", "1"},
	}, records)

	// The job again: nothing changes.
	require.Empty(t, f.deliver("m-2", f.job(id), 1))
	require.True(t, got.Equal(f.operation(id)))
}

// A teacher with no class left gets a report with the header only.
func TestTeacherReportOfNoClassesIsTheHeaderOnly(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id, _, err := f.svc.RequestTeacherReport(f.ctx, "teacher-9", time.Now())
	require.NoError(t, err)
	require.Empty(t, f.deliver("m-1", f.job(id), 1))
	res, ok := f.operation(id).Result()
	require.True(t, ok)
	require.Zero(t, res.Rows)
	_, body := fetch(t, res.URL)
	require.Equal(t, "class_id,title,starts_at,seats_taken,capacity,enrollments_total,cancellations_total\n", body)
}

// A redelivered job (the same message again, or the sweeper's copy) leaves
// one file and one succeeded operation, exactly as it was.
func TestRedeliveredJobChangesNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	op, job := f.export(f.class("s-1"))
	require.Empty(t, f.deliver("m-1", job, 1))
	done := f.operation(op.ID())
	puts := f.files.putCount()

	require.Empty(t, f.deliver("m-1", job, 2), "the same message again")
	require.Empty(t, f.deliver("m-2", job, 1), "another copy of the job")
	require.True(t, done.Equal(f.operation(op.ID())), "unchanged, updated_at included")
	require.Equal(t, puts, f.files.putCount(), "no second write")
	require.Equal(t, []string{exporter.ObjectKey(op.ID())}, f.objects())
	require.Empty(t, f.sqs.DeadLetters())
}

// A class that is gone is a permanent failure: the operation says so at
// once and the job is done, not retried and not dead-lettered.
func TestClassGoneFailsTheOperationAtOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	op, job := f.export("no-such-class")
	require.Empty(t, f.deliver("m-1", job, 1))
	got := f.operation(op.ID())
	require.Equal(t, operation.StatusFailed, got.Status())
	failure, _ := got.Failure()
	require.Equal(t, operation.FailureClassNotFound, failure.Code)
	require.Contains(t, failure.Message, "no-such-class")
	require.Empty(t, f.sqs.DeadLetters())
	require.Empty(t, f.objects())
}

// A transient failure is retried with the operation still running; the
// last allowed receive fails the operation with the reason and
// dead-letters the job with the same reason.
func TestRetriesExhaustedFailsTheOperationAndDeadLettersTheJob(t *testing.T) {
	t.Parallel()
	f := setup(t)
	op, job := f.export(f.class("s-1"))
	f.files.fail(errors.New("SlowDown: please reduce your request rate"))

	for n := 1; n < maxReceiveCount; n++ {
		require.Equal(t, []string{"m-1"}, f.deliver("m-1", job, n), "receive %d is retried", n)
		require.Equal(t, operation.StatusRunning, f.operation(op.ID()).Status())
		_, ok := f.sqs.Visibility("m-1")
		require.True(t, ok, "a backoff is set")
	}
	require.Empty(t, f.deliver("m-1", job, maxReceiveCount), "the last receive is dead-lettered, then acknowledged")

	got := f.operation(op.ID())
	require.Equal(t, operation.StatusFailed, got.Status())
	failure, _ := got.Failure()
	require.Equal(t, operation.FailureRetriesExhausted, failure.Code)
	require.Contains(t, failure.Message, "SlowDown")
	dls := f.sqs.DeadLetters()
	require.Len(t, dls, 1)
	require.Equal(t, dlqURL, dls[0].QueueURL)
	require.Equal(t, job, dls[0].Body)
	require.Equal(t, sqsconsumer.CodeRetriesExhausted, dls[0].Attributes[sqsconsumer.AttrDLQCode])
	require.Contains(t, dls[0].Attributes[sqsconsumer.AttrDLQReason], "SlowDown")
	require.Empty(t, f.objects())

	// A redrive after the cause is fixed changes nothing: the operation
	// has finished, and the teacher asks for a new export.
	f.files.fail(nil)
	require.Empty(t, f.deliver("m-2", job, 1))
	require.Equal(t, operation.StatusFailed, f.operation(op.ID()).Status())
	require.Empty(t, f.objects())
}

// A job that cannot be read fails the operation it names (malformed_job)
// and goes to the dead-letter queue for a person; a job that names no
// operation, or a message of another type, goes there too.
func TestUnreadableJobs(t *testing.T) {
	t.Parallel()
	f := setup(t)
	op, job := f.export(f.class("s-1"))
	malformed := strings.Replace(job, `"class_id"`, `"klass_id"`, 1)
	require.NotEqual(t, job, malformed)
	require.Empty(t, f.deliver("m-1", malformed, 1))
	got := f.operation(op.ID())
	require.Equal(t, operation.StatusFailed, got.Status())
	failure, _ := got.Failure()
	require.Equal(t, operation.FailureMalformedJob, failure.Code)
	require.Contains(t, failure.Message, "missing class_id")

	orphan, err := events.New(events.NewID(), time.Now(), events.ExportRequested{
		OperationID: "op-never-created", Kind: events.ExportKindRosterExport, ClassID: "c", RequestedBy: "t",
	})
	require.NoError(t, err)
	body, err := json.Marshal(orphan)
	require.NoError(t, err)
	require.Empty(t, f.deliver("m-2", string(body), 1))

	stray, err := events.New(events.NewID(), time.Now(), events.EnrollmentCreated{EnrollmentID: "e", ClassID: "c", StudentID: "s"})
	require.NoError(t, err)
	strayBody, err := json.Marshal(stray)
	require.NoError(t, err)
	require.Empty(t, f.deliver("m-3", string(strayBody), 1), "not retried")

	codes := map[string]string{}
	for _, dl := range f.sqs.DeadLetters() {
		codes[dl.Body] = dl.Attributes[sqsconsumer.AttrDLQCode]
	}
	require.Equal(t, map[string]string{
		malformed:         sqsconsumer.CodeMalformedEvent,
		string(body):      exporter.CodeOperationNotFound,
		string(strayBody): exporter.CodeUnexpectedType,
	}, codes)
}

func TestLogsAndMetricsNameTheOperation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	op, job := f.export(f.class("s-1"))
	require.Empty(t, f.deliver("m-1", job, 1))
	require.Contains(t, f.logs.String(), `"operation_id":"`+op.ID()+`"`)
	require.Contains(t, f.logs.String(), `"msg":"export succeeded"`)
	require.Contains(t, f.metrics.String(), `"operation_id":"`+op.ID()+`"`)
}

func TestNewChecksDeps(t *testing.T) {
	t.Parallel()
	_, err := exporter.New(exporter.Deps{URLExpiry: -time.Second})
	for _, want := range []string{"Operations", "Classes", "Rosters", "Teachers", "Files", "URLExpiry"} {
		require.ErrorContains(t, err, want)
	}
	_, err = exporter.NewBucket(nil, "")
	require.ErrorContains(t, err, "nil S3 client")
	require.ErrorContains(t, err, "no bucket name")
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"CLUB_TABLE": "club", "OUTBOX_TABLE": "outbox", "QUEUE_URL": "q", "DLQ_URL": "dlq", "MAX_RECEIVE_COUNT": "5",
		"EXPORTS_BUCKET": "club-exports", "EXPORT_URL_EXPIRY": "900s",
	}
	cfg, err := exporter.LoadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, "club-exports", cfg.Bucket)
	require.Equal(t, 15*time.Minute, cfg.URLExpiry)
	require.Equal(t, 5, cfg.Queue.MaxReceiveCount)

	delete(env, "EXPORT_URL_EXPIRY")
	cfg, err = exporter.LoadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, exporter.DefaultURLExpiry, cfg.URLExpiry)

	_, err = exporter.LoadConfig(func(k string) string { return map[string]string{"EXPORT_URL_EXPIRY": "8d"}[k] })
	for _, want := range []string{"CLUB_TABLE is required", "QUEUE_URL is required", "EXPORTS_BUCKET is required", "EXPORT_URL_EXPIRY"} {
		require.ErrorContains(t, err, want, "every problem at once")
	}
}
