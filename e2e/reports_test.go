package e2e

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// The nightly teacher report (docs/architecture.md, work classes): the
// schedule asks for one report operation per teacher and day; the relay
// sends its job to the bulk class's exports queue; the exporter writes the
// CSV file and records its URL; the teacher finds it with
// GET /operations?kind=teacher_report.

// fireReportSchedule invokes the report scheduler exactly as its EventBridge
// schedule does, with a scheduled event whose time is the fire time, and
// returns the function's answer.
func fireReportSchedule(t *testing.T, at time.Time) map[string]any {
	t.Helper()
	name := stack.file.Functions["ReportSchedulerFunction"]
	require.NotEmpty(t, name, "the stack has the report scheduler")
	payload, err := json.Marshal(lambdaevents.EventBridgeEvent{
		Version: "0", ID: uuid.NewString(), DetailType: "Scheduled Event", Source: "aws.events",
		AccountID: "000000000000", Time: at.UTC(), Region: "us-east-1",
		Resources: []string{"arn:aws:events:us-east-1:000000000000:rule/nightly-teacher-reports"},
		Detail:    json.RawMessage(`{}`),
	})
	require.NoError(t, err)
	out, err := lambda.NewFromConfig(stack.aws).Invoke(context.Background(), &lambda.InvokeInput{
		FunctionName: aws.String(name), Payload: payload,
	})
	require.NoError(t, err)
	require.Nil(t, out.FunctionError, "%s", out.Payload)
	var res map[string]any
	require.NoError(t, json.Unmarshal(out.Payload, &res), "%s", out.Payload)
	return res
}

// reportsOf lists the caller's teacher_report operations, following every
// page.
func reportsOf(t *testing.T, u user) []map[string]any {
	t.Helper()
	var out []map[string]any
	path := "/operations?kind=teacher_report&limit=10"
	for range 20 {
		r := call(t, u, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.raw))
		list, _ := r.body["operations"].([]any)
		for _, op := range list {
			out = append(out, op.(map[string]any))
		}
		next := r.str("next_cursor")
		if next == "" {
			return out
		}
		path = "/operations?kind=teacher_report&limit=10&cursor=" + url.QueryEscape(next)
	}
	t.Fatal("the list never ended")
	return nil
}

// The schedule's job produces the report: one row per class of the teacher,
// in start order, with seats and the stats projection's counters; firing
// the schedule twice the same day asks for one report, the next day for
// another; nobody else sees the teacher's reports.
func TestNightlyTeacherReport(t *testing.T) {
	t.Parallel()
	teacher := newUser(t, "teacher")
	newClassOf := func(title string, capacity int, startsIn time.Duration) string {
		r := call(t, teacher, http.MethodPost, "/classes", map[string]any{
			"title": title, "capacity": capacity, "starts_at": time.Now().Add(startsIn).UTC().Format(time.RFC3339),
		})
		require.Equal(t, http.StatusCreated, r.status, string(r.raw))
		return r.str("class_id")
	}
	later := newClassOf("Streams, later", 5, 72*time.Hour)
	sooner := newClassOf("Queues, sooner", 3, 24*time.Hour)
	var first struct {
		student      user
		enrollmentID string
	}
	for i, classID := range []string{later, later, sooner} {
		student := newUser(t, "student")
		r := enroll(t, student, classID, id("key"))
		require.Equal(t, http.StatusCreated, r.status, string(r.raw))
		if i == 0 {
			first.student, first.enrollmentID = student, r.str("enrollment_id")
		}
	}
	// One student of the later class gives the seat up: freed and counted.
	r := call(t, first.student, http.MethodDelete, "/enrollments/"+first.enrollmentID, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.raw))
	counted := func(classID string, enrolled, cancelled float64) bool {
		r := call(t, teacher, http.MethodGet, "/classes/"+classID+"/stats", nil)
		return r.body["enrollments_total"] == enrolled && r.body["cancellations_total"] == cancelled
	}
	eventually(t, 20*time.Second, "the counters have every enrollment and cancellation", func() bool {
		return counted(later, 2, 1) && counted(sooner, 1, 0)
	})

	night := time.Now().UTC().Truncate(24 * time.Hour).Add(2 * time.Hour)
	fired := fireReportSchedule(t, night)
	require.Equal(t, night.Format(time.DateOnly), fired["date"])
	require.GreaterOrEqual(t, fired["teachers"], float64(1))
	require.Zero(t, fired["failed"])

	again := fireReportSchedule(t, night.Add(time.Hour)) // fired again the same day
	require.Equal(t, night.Format(time.DateOnly), again["date"])
	require.GreaterOrEqual(t, again["already_requested"], float64(1), "this teacher's report was asked for already")

	var reports []map[string]any
	eventually(t, 10*time.Second, "the report is listed", func() bool { // from the lagging index
		reports = reportsOf(t, teacher)
		return len(reports) > 0
	})
	require.Len(t, reports, 1, "one report per teacher and day: %v", reports)
	opID := reports[0]["operation_id"].(string)
	require.Equal(t, "teacher_report", reports[0]["kind"])

	seen, done := followOperation(t, teacher, opID)
	require.Equal(t, "succeeded", done.str("status"), "statuses %v: %s", seen, done.raw)
	history, _ := statusesOf(t, done)
	require.Equal(t, []string{"pending", "running", "succeeded"}, history)
	res := resultOf(t, done)
	require.Equal(t, 2, res.rows)
	status, body := fetch(t, res.url)
	require.Equal(t, http.StatusOK, status, string(body))
	records, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	require.NoError(t, err)
	require.Len(t, records, 3, "a header and one row per class: %q", records)
	require.Equal(t, []string{"class_id", "title", "starts_at", "seats_taken", "capacity", "enrollments_total", "cancellations_total"}, records[0])
	require.Equal(t, []string{sooner, "Queues, sooner", "1", "3", "1", "0"}, without(records[1], 2), "in start order")
	require.Equal(t, []string{later, "Streams, later", "1", "5", "2", "1"}, without(records[2], 2))
	require.Equal(t, []string{"exports/" + opID + ".csv"}, exportObjects(t, opID))

	// The next night is another report; the first is still there.
	fireReportSchedule(t, night.Add(24*time.Hour))
	// The list is read from an index, which lags its table (on AWS, and
	// under the adversary's ddb.gsi_lag): a later read may show less than
	// an earlier one, so the list checked is the one that showed both.
	eventually(t, 10*time.Second, "the next day's report is listed", func() bool {
		reports = reportsOf(t, teacher)
		return len(reports) == 2
	})
	require.Equal(t, opID, reports[1]["operation_id"], "newest first")

	for _, other := range []user{newUser(t, "teacher"), newUser(t, "student")} {
		require.Empty(t, reportsOf(t, other), "only the teacher's own reports")
		r := call(t, other, http.MethodGet, "/operations/"+opID, nil)
		require.Equal(t, http.StatusNotFound, r.status)
		require.Equal(t, "operation_not_found", r.errorCode())
	}
}

// without returns the record without its i-th field (a value the test does
// not pin, such as a start time it computed from the clock).
func without(record []string, i int) []string {
	out := append([]string{}, record[:i]...)
	return append(out, record[i+1:]...)
}
