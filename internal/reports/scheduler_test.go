package reports_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/operation"
	"github.com/clubdev/club/internal/reports"
	"github.com/clubdev/club/internal/store"
	"github.com/clubdev/club/localcloud/testkit"
)

// The engine the tests run on now (testkit: the package runs once on kumo
// and once on moto), shared by the test binary; each test has its own
// tables.
var ddb *dynamodb.Client

func TestMain(m *testing.M) {
	os.Exit(testkit.Run(m, func(url string) {
		ddb = dynamodb.New(dynamodb.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(url),
			Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
			// kumo's X-Amz-Crc32 does not match its body; the data is fine.
			DisableValidateResponseChecksum: true,
		})
	}))
}

var seq atomic.Int64

type fixture struct {
	t       *testing.T
	ctx     context.Context
	st      *store.Store
	ops     *store.Operations
	svc     *operation.Service
	metrics *bytes.Buffer
}

func setup(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	n := seq.Add(1)
	cfg := store.Config{ClubTable: fmt.Sprintf("rep-club-%d", n), OutboxTable: fmt.Sprintf("rep-outbox-%d", n)}
	require.NoError(t, store.CreateTables(ctx, ddb, cfg))
	st, err := store.New(ddb, cfg)
	require.NoError(t, err)
	ops := st.Operations
	svc, err := operation.NewService(operation.Deps{Store: ops})
	require.NoError(t, err)
	return &fixture{t: t, ctx: ctx, st: st, ops: ops, svc: svc, metrics: &bytes.Buffer{}}
}

func (f *fixture) scheduler(teachers reports.Teachers, requester reports.Requester) *reports.Scheduler {
	f.t.Helper()
	s, err := reports.New(reports.Deps{Teachers: teachers, Requester: requester, Metrics: f.metrics})
	require.NoError(f.t, err)
	return s
}

func (f *fixture) classOf(teacher string) {
	f.t.Helper()
	c, err := class.New(events.NewID(), teacher, "Go", 10, time.Date(2026, 4, 1, 17, 0, 0, 0, time.UTC))
	require.NoError(f.t, err)
	require.NoError(f.t, f.st.Classes.Create(f.ctx, c))
}

// reportJobs returns the teacher_report jobs in the outbox, by operation.
func (f *fixture) reportJobs() map[string]events.ExportRequested {
	f.t.Helper()
	rows, err := f.st.Outbox.Unpublished(f.ctx, time.Now().Add(time.Hour), 1000)
	require.NoError(f.t, err)
	jobs := map[string]events.ExportRequested{}
	for _, r := range rows {
		env, err := r.Envelope()
		require.NoError(f.t, err)
		job, err := env.ExportRequested()
		require.NoError(f.t, err)
		require.NotContains(f.t, jobs, job.OperationID, "one job per operation")
		jobs[job.OperationID] = job
	}
	return jobs
}

var night = time.Date(2026, 3, 5, 2, 0, 0, 0, time.UTC)

// Every teacher with a class gets one report of the day, however often the
// schedule fires that day; the next day is another report.
func TestRunAsksOnceForEveryTeacherOfADay(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, teacher := range []string{"t-1", "t-1", "t-1", "t-2", "t-3"} {
		f.classOf(teacher)
	}
	s := f.scheduler(f.st.Classes, f.svc)

	res, err := s.Run(f.ctx, night)
	require.NoError(t, err)
	require.Equal(t, reports.Result{Date: "2026-03-05", Teachers: 3, Requested: 3}, res)
	jobs := f.reportJobs()
	require.Len(t, jobs, 3)
	for _, teacher := range []string{"t-1", "t-2", "t-3"} {
		id := operation.TeacherReportID(teacher, night)
		require.Equal(t, events.ExportRequested{OperationID: id, Kind: events.ExportKindTeacherReport, RequestedBy: teacher}, jobs[id])
		op, err := f.ops.Get(f.ctx, id)
		require.NoError(t, err)
		require.Equal(t, operation.KindTeacherReport, op.Kind())
		require.Equal(t, teacher, op.CreatedBy())
		require.Equal(t, operation.StatusPending, op.Status())
	}
	require.Contains(t, f.metrics.String(), reports.MetricReportsRequested)

	// Fired again the same day (a retry, a second fire): nothing new.
	res, err = s.Run(f.ctx, night.Add(21*time.Hour))
	require.NoError(t, err)
	require.Equal(t, reports.Result{Date: "2026-03-05", Teachers: 3, AlreadyRequested: 3}, res)
	require.Len(t, f.reportJobs(), 3)

	res, err = s.Run(f.ctx, night.Add(24*time.Hour))
	require.NoError(t, err)
	require.Equal(t, 3, res.Requested, "the next day's reports")
	require.Len(t, f.reportJobs(), 6)
}

// More teachers than a page: the run reads them page by page and misses
// none.
func TestRunPagesThroughTheTeachers(t *testing.T) {
	t.Parallel()
	f := setup(t)
	const teachers = reports.PageSize + 30
	for i := range teachers {
		f.classOf(fmt.Sprintf("t-%03d", i))
	}
	pages := &countingTeachers{next: f.st.Classes}
	res, err := f.scheduler(pages, f.svc).Run(f.ctx, night)
	require.NoError(t, err)
	require.Equal(t, teachers, res.Requested)
	require.Len(t, f.reportJobs(), teachers)
	require.GreaterOrEqual(t, pages.calls.Load(), int64(2), "more than one page")
	require.Equal(t, int64(reports.PageSize), pages.maxLimit.Load(), "no page larger than PageSize")
}

type countingTeachers struct {
	next     reports.Teachers
	calls    atomic.Int64
	maxLimit atomic.Int64
}

func (c *countingTeachers) Teachers(ctx context.Context, cursor string, limit int) ([]string, string, error) {
	c.calls.Add(1)
	if int64(limit) > c.maxLimit.Load() {
		c.maxLimit.Store(int64(limit))
	}
	return c.next.Teachers(ctx, cursor, limit)
}

// A teacher whose report cannot be asked for does not stop the others; the
// run fails, so that its retry asks again for what is missing.
func TestRunGoesOnPastAFailureAndReportsIt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, teacher := range []string{"t-1", "t-2", "t-3"} {
		f.classOf(teacher)
	}
	flaky := &flakyRequester{next: f.svc, failFor: "t-2"}
	s := f.scheduler(f.st.Classes, flaky)
	res, err := s.Run(f.ctx, night)
	require.ErrorContains(t, err, "throttled")
	require.Equal(t, reports.Result{Date: "2026-03-05", Teachers: 3, Requested: 2, Failed: 1}, res)

	flaky.heal()
	res, err = s.Run(f.ctx, night)
	require.NoError(t, err)
	require.Equal(t, reports.Result{Date: "2026-03-05", Teachers: 3, Requested: 1, AlreadyRequested: 2}, res)
	require.Len(t, f.reportJobs(), 3)
}

type flakyRequester struct {
	next    reports.Requester
	mu      sync.Mutex
	failFor string
}

func (r *flakyRequester) heal() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failFor = ""
}

func (r *flakyRequester) RequestTeacherReport(ctx context.Context, teacherID string, date time.Time) (string, bool, error) {
	r.mu.Lock()
	fail := teacherID == r.failFor
	r.mu.Unlock()
	if fail {
		return "", false, errors.New("ProvisionedThroughputExceededException: throttled")
	}
	return r.next.RequestTeacherReport(ctx, teacherID, date)
}

// The handler reports for the day of the scheduled fire time, so that a
// retried delivery of one fire, even after midnight, is the same day.
func TestHandlerReportsForTheScheduledDay(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.classOf("t-1")
	h, err := reports.NewHandler(f.scheduler(f.st.Classes, f.svc))
	require.NoError(t, err)
	fire := lambdaevents.EventBridgeEvent{DetailType: "Scheduled Event", Source: "aws.events", Time: time.Date(2026, 3, 5, 23, 59, 0, 0, time.FixedZone("UTC-1", -3600))}
	res, err := h.Handle(f.ctx, fire)
	require.NoError(t, err)
	require.Equal(t, "2026-03-06", res.Date, "the UTC day of the fire time")
	require.Equal(t, 1, res.Requested)
	_, err = f.ops.Get(f.ctx, operation.TeacherReportID("t-1", time.Date(2026, 3, 6, 0, 0, 0, 0, time.UTC)))
	require.NoError(t, err)

	res, err = h.Handle(f.ctx, lambdaevents.EventBridgeEvent{})
	require.NoError(t, err)
	require.Equal(t, time.Now().UTC().Format(time.DateOnly), res.Date, "no time: today")

	_, err = reports.NewHandler(nil)
	require.Error(t, err)
	_, err = reports.New(reports.Deps{})
	require.ErrorContains(t, err, "Teachers")
	require.ErrorContains(t, err, "Requester")
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	cfg, err := reports.LoadConfig(func(k string) string {
		return map[string]string{"CLUB_TABLE": "club", "OUTBOX_TABLE": "outbox"}[k]
	})
	require.NoError(t, err)
	require.Equal(t, "club", cfg.ClubTable)
	_, err = reports.LoadConfig(func(k string) string { return map[string]string{"AWS_LAMBDA_LOG_LEVEL": "LOUD"}[k] })
	for _, want := range []string{"CLUB_TABLE is required", "OUTBOX_TABLE is required", "AWS_LAMBDA_LOG_LEVEL"} {
		require.ErrorContains(t, err, want)
	}
}
