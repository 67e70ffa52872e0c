package api_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/api"
	"github.com/clubdev/club/internal/club/operation"
	"github.com/clubdev/club/internal/club/operation/operationtest"
)

// An export is accepted, not done: 202 with the operation, pending, and
// where to follow it; the operation and its job are stored together.
func TestExportIsAcceptedWithAnOperation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	classID := f.createClass(teacher, 3)
	for _, body := range []string{"", "{}", " { } "} {
		r := f.do("POST", "/classes/"+classID+"/exports", teacher, body)
		require.Equal(t, 202, r.status, r.body)
		id := r.str("operation_id")
		require.True(t, strings.HasPrefix(id, "op-"), id)
		require.JSONEq(t, fmt.Sprintf(`{"operation_id":%q,"kind":"roster_export","status":"pending"}`, id), r.body)
		require.Equal(t, "/operations/"+id, r.headers["Location"])

		op, err := f.operations.Get(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, classID, op.ClassID())
		require.Equal(t, teacher.sub, op.CreatedBy())
		rows, err := f.operations.Unpublished(context.Background(), time.Now().Add(time.Hour), 100)
		require.NoError(t, err)
		jobs := 0
		for _, row := range rows {
			if row.AggregateID == id {
				jobs++
				require.Equal(t, events.TypeExportRequested, row.Type)
			}
		}
		require.Equal(t, 1, jobs, "one job per operation")
	}
}

func TestExportRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	classID := f.createClass(teacher, 3)
	tests := []struct {
		name, path, body string
		who              caller
		wantStatus       int
		wantCode         string
	}{
		{"unknown field", "/classes/" + classID + "/exports", `{"format":"xlsx"}`, teacher, 400, "validation_failed"},
		{"not JSON", "/classes/" + classID + "/exports", `{"format"`, teacher, 400, "invalid_json"},
		{"not an object", "/classes/" + classID + "/exports", `[]`, teacher, 400, "validation_failed"},
		{"unknown class", "/classes/no-such-class/exports", "", teacher, 404, "class_not_found"},
		{"someone else's class", "/classes/" + classID + "/exports", "", otherTeacher, 404, "not_found"},
		{"a student", "/classes/" + classID + "/exports", "", student, 403, "forbidden"},
		{"another teacher's odd body changes nothing either", "/classes/" + classID + "/exports", `{"x":1}`, otherTeacher, 404, "not_found"},
	}
	for _, tt := range tests {
		r := f.do("POST", tt.path, tt.who, tt.body)
		require.Equal(t, tt.wantStatus, r.status, "%s: %s", tt.name, r.body)
		require.Equal(t, tt.wantCode, r.errorCode(), tt.name)
	}
	rows, err := f.operations.Unpublished(context.Background(), time.Now().Add(time.Hour), 100)
	require.NoError(t, err)
	require.Empty(t, rows, "a refused request writes nothing")
}

// GET /operations/{id} shows the status; the result once it succeeded (not
// where the file is stored), the error once it failed; to its creator only.
func TestGetOperation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	classID := f.createClass(teacher, 3)
	ctx := context.Background()
	at := time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC)

	id := f.export(teacher, classID).str("operation_id")
	r := f.do("GET", "/operations/"+id, teacher, "")
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, "pending", r.str("status"))
	require.Equal(t, "roster_export", r.str("kind"))
	require.Nil(t, r.doc["result"])
	require.Nil(t, r.doc["error"])
	require.Len(t, r.doc["history"], 1)

	_, err := f.operations.Update(ctx, id, func(o *operation.Operation) error { return o.Start(at) })
	require.NoError(t, err)
	_, err = f.operations.Update(ctx, id, func(o *operation.Operation) error {
		return o.Succeed(operation.Result{URL: "https://exports.example/r.csv?X-Amz-Signature=s", Rows: 2, ExpiresAt: at.Add(time.Hour), ObjectKey: "exports/" + id + ".csv"}, at.Add(time.Second))
	})
	require.NoError(t, err)
	r = f.do("GET", "/operations/"+id, teacher, "")
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, "succeeded", r.str("status"))
	require.Equal(t, map[string]any{"url": "https://exports.example/r.csv?X-Amz-Signature=s", "rows": float64(2), "expires_at": "2026-03-04T10:00:00Z"}, r.doc["result"])
	require.Equal(t, "2026-03-04T09:00:01Z", r.str("updated_at"))
	require.NotContains(t, r.body, "exports/"+id, "the storage key is not the client's business")
	var statuses []string
	for _, h := range r.doc["history"].([]any) {
		statuses = append(statuses, h.(map[string]any)["status"].(string))
	}
	require.Equal(t, []string{"pending", "running", "succeeded"}, statuses)

	failed := f.export(teacher, classID).str("operation_id")
	_, err = f.operations.Update(ctx, failed, func(o *operation.Operation) error {
		return o.Fail(operation.Failure{Code: operation.FailureRetriesExhausted, Message: "every attempt failed"}, at)
	})
	require.NoError(t, err)
	r = f.do("GET", "/operations/"+failed, teacher, "")
	require.Equal(t, "failed", r.str("status"))
	require.Equal(t, map[string]any{"code": "retries_exhausted", "message": "every attempt failed"}, r.doc["error"])
	require.Nil(t, r.doc["result"])

	for _, c := range []caller{otherTeacher, student, operator, stranger} {
		r := f.do("GET", "/operations/"+id, c, "")
		require.Equal(t, 404, r.status, c.sub)
		require.Equal(t, "operation_not_found", r.errorCode())
	}
	for _, path := range []string{"/operations/op-missing", "/operations/op%20bad", "/operations/" + strings.Repeat("x", 200)} {
		r := f.do("GET", path, teacher, "")
		require.Equal(t, 404, r.status, path)
		require.Equal(t, "operation_not_found", r.errorCode(), path)
	}
	require.Contains(t, f.logs.String(), `"operation_id":"`+id+`"`)
}

// GET /operations lists the caller's own operations, newest first, a page
// at a time; kind=teacher_report finds the nightly reports the schedule
// asked for on the teacher's behalf.
func TestListOperations(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	clock.Store(time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Add(int64(time.Second))).UTC() }
	svc, err := operation.NewService(operation.Deps{Store: operationtest.NewMemory(), Now: now})
	require.NoError(t, err)
	f := setup(t, func(d *api.Deps) { d.Operations = svc })
	classID := f.createClass(teacher, 3)
	var exports []string
	for range 3 {
		exports = append(exports, f.export(teacher, classID).str("operation_id"))
	}
	report, created, err := svc.RequestTeacherReport(context.Background(), teacher.sub, time.Date(2026, 3, 5, 2, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	require.True(t, created)

	ids := func(r result) []string {
		var out []string
		for _, op := range r.doc["operations"].([]any) {
			out = append(out, op.(map[string]any)["operation_id"].(string))
		}
		return out
	}
	r := f.do("GET", "/operations", teacher, "")
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, []string{report, exports[2], exports[1], exports[0]}, ids(r), "newest first")
	require.Nil(t, r.doc["next_cursor"], "one page holds them all")
	first := r.doc["operations"].([]any)[0].(map[string]any)
	require.Equal(t, "teacher_report", first["kind"])
	require.Equal(t, "pending", first["status"])

	r = f.do("GET", "/operations?kind=teacher_report", teacher, "")
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, []string{report}, ids(r))

	var paged []string
	path := "/operations?kind=roster_export&limit=2"
	for range 5 {
		r = f.do("GET", path, teacher, "")
		require.Equal(t, 200, r.status, r.body)
		require.LessOrEqual(t, len(ids(r)), 2)
		paged = append(paged, ids(r)...)
		next := r.str("next_cursor")
		if next == "" {
			break
		}
		path = "/operations?kind=roster_export&limit=2&cursor=" + url.QueryEscape(next)
	}
	require.Equal(t, []string{exports[2], exports[1], exports[0]}, paged)

	for _, c := range []caller{otherTeacher, student, operator, stranger} {
		r := f.do("GET", "/operations", c, "")
		require.Equal(t, 200, r.status, r.body)
		require.JSONEq(t, `{"operations":[]}`, r.body, "only one's own: %s", c.sub)
	}

	for _, tc := range []struct{ query, field string }{
		{"kind=pdf", "kind"},
		{"limit=0", "limit"},
		{"limit=101", "limit"},
		{"limit=ten", "limit"},
		{"cursor=not-a-cursor", "cursor"},
		{"limit=%zz", "query"},
	} {
		r := f.do("GET", "/operations?"+tc.query, teacher, "")
		require.Equal(t, 400, r.status, "%s: %s", tc.query, r.body)
		require.Equal(t, "validation_failed", r.errorCode(), tc.query)
		require.Equal(t, tc.field, r.errorField(), tc.query)
	}
	r = f.do("GET", "/operations", anonymous, "")
	require.Equal(t, 401, r.status)
}
