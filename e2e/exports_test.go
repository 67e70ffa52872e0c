package e2e

import (
	"context"
	"encoding/csv"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"
)

// Roster exports end to end (docs/architecture.md, exports): the API
// accepts the export as an operation, the relay sends its job to the
// exports queue, the exporter writes the CSV file to the exports bucket and
// records a presigned URL that expires.

// classWithStudents creates a class with n enrolled students and waits
// until its roster projection lists them all.
func classWithStudents(t *testing.T, n int) (classID string, teacher user, students []string) {
	t.Helper()
	classID, teacher = newClass(t, 10)
	for range n {
		s := newUser(t, "student")
		r := enroll(t, s, classID, id("key"))
		require.Equal(t, http.StatusCreated, r.status, string(r.raw))
		students = append(students, s.sub)
	}
	eventually(t, 20*time.Second, "the roster lists every student", func() bool {
		return len(rosterStudents(t, teacher, classID)) == n
	})
	return classID, teacher, students
}

// requestExport asks for an export of the class's roster and checks the
// acceptance: 202, pending, and where to follow it.
func requestExport(t *testing.T, teacher user, classID string) string {
	t.Helper()
	r := call(t, teacher, http.MethodPost, "/classes/"+classID+"/exports", nil)
	require.Equal(t, http.StatusAccepted, r.status, string(r.raw))
	require.Equal(t, "pending", r.str("status"), "accepted, not done")
	require.Equal(t, "roster_export", r.str("kind"))
	operationID := r.str("operation_id")
	require.NotEmpty(t, operationID)
	require.Equal(t, "/operations/"+operationID, r.header.Get("Location"))
	return operationID
}

// followOperation polls the operation until it has finished and returns
// the statuses seen, in the order they were seen, and the last answer.
func followOperation(t *testing.T, u user, operationID string) ([]string, response) {
	t.Helper()
	var seen []string
	var last response
	eventually(t, 60*time.Second, "operation "+operationID+" finished", func() bool {
		last = call(t, u, http.MethodGet, "/operations/"+operationID, nil)
		require.Equal(t, http.StatusOK, last.status, string(last.raw))
		if s := last.str("status"); len(seen) == 0 || seen[len(seen)-1] != s {
			seen = append(seen, s)
		}
		return last.str("status") == "succeeded" || last.str("status") == "failed"
	})
	return seen, last
}

// exportResult is the result of a succeeded operation.
type exportResult struct {
	url       string
	rows      int
	expiresAt time.Time
}

func resultOf(t *testing.T, r response) exportResult {
	t.Helper()
	res, ok := r.body["result"].(map[string]any)
	require.True(t, ok, "a succeeded operation has a result: %s", r.raw)
	rows, _ := res["rows"].(float64)
	expires, err := time.Parse(time.RFC3339, res["expires_at"].(string))
	require.NoError(t, err)
	url, _ := res["url"].(string)
	return exportResult{url: url, rows: int(rows), expiresAt: expires}
}

// statusesOf reads the history of an operation document.
func statusesOf(t *testing.T, r response) ([]string, []time.Time) {
	t.Helper()
	var statuses []string
	var at []time.Time
	list, _ := r.body["history"].([]any)
	for _, e := range list {
		m := e.(map[string]any)
		ts, err := time.Parse(time.RFC3339Nano, m["at"].(string))
		require.NoError(t, err)
		statuses, at = append(statuses, m["status"].(string)), append(at, ts)
	}
	return statuses, at
}

// fetch gets a URL with no credentials at all, as a browser would.
func fetch(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// exportObjects lists the exports bucket's objects of an operation.
func exportObjects(t *testing.T, operationID string) []string {
	t.Helper()
	client := s3.NewFromConfig(stack.aws, func(o *s3.Options) { o.UsePathStyle = true })
	out, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{
		Bucket: aws.String(stack.file.Buckets["ExportsBucket"]), Prefix: aws.String("exports/" + operationID),
	})
	require.NoError(t, err)
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// exportJob returns the stored job of an operation from the outbox table.
func exportJob(t *testing.T, operationID string) string {
	t.Helper()
	db := dynamodb.NewFromConfig(stack.aws)
	out, err := db.Scan(context.Background(), &dynamodb.ScanInput{
		TableName:                 aws.String(stack.file.Tables["OutboxTable"]),
		ConsistentRead:            aws.Bool(true),
		FilterExpression:          aws.String("aggregate_id = :id AND #type = :type"),
		ExpressionAttributeNames:  map[string]string{"#type": "type"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":id": &ddbtypes.AttributeValueMemberS{Value: operationID}, ":type": &ddbtypes.AttributeValueMemberS{Value: "export.requested"}},
	})
	require.NoError(t, err)
	require.Len(t, out.Items, 1, "one job per operation")
	payload, _ := out.Items[0]["payload"].(*ddbtypes.AttributeValueMemberS)
	require.NotNil(t, payload)
	return payload.Value
}

// The seed's "done must be honest" for a long operation: the export is
// accepted at once (pending), runs, and succeeds with a URL to a CSV file
// whose rows are the roster; the URL needs no credentials and stops working
// once it has expired.
func TestExportRosterEndToEnd(t *testing.T) {
	t.Parallel()
	classID, teacher, students := classWithStudents(t, 3)
	operationID := requestExport(t, teacher, classID)

	seen, done := followOperation(t, teacher, operationID)
	require.Equal(t, "succeeded", done.str("status"), string(done.raw))
	order := []string{"pending", "running", "succeeded"}
	for i := 1; i < len(seen); i++ {
		require.Less(t, slices.Index(order, seen[i-1]), slices.Index(order, seen[i]), "statuses only move forward: %v", seen)
	}
	history, at := statusesOf(t, done)
	require.Equal(t, order, history, "it went through every status")
	require.True(t, slices.IsSortedFunc(at, func(a, b time.Time) int { return a.Compare(b) }), "in time order: %v", at)
	require.Nil(t, done.body["error"])

	res := resultOf(t, done)
	require.Equal(t, 3, res.rows)
	require.True(t, strings.HasPrefix(res.url, "http://") || strings.HasPrefix(res.url, "https://"), "absolute: %s", res.url)
	require.True(t, time.Now().Before(res.expiresAt), "not expired yet: %s", res.expiresAt)

	status, body := fetch(t, res.url)
	require.Equal(t, http.StatusOK, status, string(body))
	records, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"student_id", "enrolled_at"}, records[0])
	var listed []string
	for _, rec := range records[1:] {
		listed = append(listed, rec[0])
	}
	slices.Sort(listed)
	slices.Sort(students)
	require.Equal(t, students, listed, "one row per student of the roster")
	require.Equal(t, []string{"exports/" + operationID + ".csv"}, exportObjects(t, operationID))

	if time.Until(res.expiresAt) > 2*time.Minute {
		t.Logf("this stack's export URLs work until %s; not waiting for the expiry", res.expiresAt.Format(time.RFC3339))
		return
	}
	eventually(t, time.Until(res.expiresAt)+15*time.Second, "the URL is refused after expires_at", func() bool {
		status, _ = fetch(t, res.url)
		return status != http.StatusOK
	})
	require.Equal(t, http.StatusForbidden, status)
	require.False(t, time.Now().Before(res.expiresAt), "it worked until expires_at")
}

// A redelivered export job — the same job sent to the exports queue again,
// as a retried stream batch or the sweeper would — leaves one file and one
// succeeded operation, unchanged.
func TestRedeliveredExportJobChangesNothing(t *testing.T) {
	t.Parallel()
	classID, teacher, _ := classWithStudents(t, 1)
	operationID := requestExport(t, teacher, classID)
	_, done := followOperation(t, teacher, operationID)
	require.Equal(t, "succeeded", done.str("status"), string(done.raw))

	sendEnvelope(t, "ExportsQueue", exportJob(t, operationID))
	drained(t, "ExportsQueue")

	again := call(t, teacher, http.MethodGet, "/operations/"+operationID, nil)
	require.Equal(t, http.StatusOK, again.status)
	require.Equal(t, "succeeded", again.str("status"))
	require.Equal(t, done.str("updated_at"), again.str("updated_at"), "not written again")
	require.Equal(t, done.body["result"], again.body["result"], "the same result")
	require.Equal(t, []string{"exports/" + operationID + ".csv"}, exportObjects(t, operationID), "one file")
	exportsDLQ.Lock()
	defer exportsDLQ.Unlock()
	require.Empty(t, receiveAll(t, "ExportsDLQ"), "acknowledged, not dead-lettered")
}

// Only the teacher who asked sees the operation; anyone else is told it
// does not exist, and nobody else may ask for the export.
func TestExportOperationIsItsCreatorsOnly(t *testing.T) {
	t.Parallel()
	classID, teacher := newClass(t, 10)
	operationID := requestExport(t, teacher, classID)
	path := "/operations/" + operationID

	for _, u := range []user{newUser(t, "teacher"), newUser(t, "student"), newUser(t, "operator")} {
		r := call(t, u, http.MethodGet, path, nil)
		require.Equal(t, http.StatusNotFound, r.status, "%s: %s", u.role, r.raw)
		require.Equal(t, "operation_not_found", r.errorCode(), u.role)
	}
	r := call(t, user{}, http.MethodGet, path, nil)
	require.Equal(t, http.StatusUnauthorized, r.status, "no token: refused by the gateway")
	r = call(t, teacher, http.MethodGet, "/operations/op-"+id("missing"), nil)
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, "operation_not_found", r.errorCode(), "exactly as for one that does not exist")

	r = call(t, newUser(t, "teacher"), http.MethodPost, "/classes/"+classID+"/exports", nil)
	require.Equal(t, http.StatusNotFound, r.status, "another teacher's class")
	require.Equal(t, "not_found", r.errorCode())
	r = call(t, newUser(t, "student"), http.MethodPost, "/classes/"+classID+"/exports", nil)
	require.Equal(t, http.StatusForbidden, r.status)
	require.Equal(t, "forbidden", r.errorCode())

	r = call(t, teacher, http.MethodGet, path, nil)
	require.Equal(t, http.StatusOK, r.status, "its creator sees it")
	require.Equal(t, operationID, r.str("operation_id"))
}
