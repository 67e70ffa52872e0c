package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/api"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/profile"
)

// errorCase is a request expected to fail with a status and code (and, for
// validation_failed, a field).
type errorCase struct {
	name       string
	who        caller
	body       string
	headers    []string
	wantStatus int
	wantCode   string
	wantField  string
}

func (tt errorCase) check(t *testing.T, r result) {
	t.Helper()
	require.Equal(t, tt.wantStatus, r.status, r.body)
	require.Equal(t, tt.wantCode, r.errorCode(), r.body)
	require.Equal(t, tt.wantField, r.errorField(), r.body)
	e := r.doc["error"].(map[string]any)
	require.NotEmpty(t, e["message"], "every error explains itself")
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := f.do("GET", "/healthz", anonymous, "")
	require.Equal(t, 200, r.status)
	require.Equal(t, "ok", r.str("status"))

	r = f.do("POST", "/healthz", anonymous, "")
	require.Equal(t, 405, r.status)
	require.Equal(t, "method_not_allowed", r.errorCode())
	require.Equal(t, "GET", r.headers["Allow"])
}

func TestCreateClass(t *testing.T) {
	t.Parallel()
	t.Run("created with every field", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		r := f.do("POST", "/classes", teacher, `{"title":"  Go basics ","capacity":3,"starts_at":"2026-04-01T19:00:00+02:00"}`)
		require.Equal(t, 201, r.status, r.body)
		require.JSONEq(t, `{"class_id":"class-1","title":"Go basics","capacity":3,"seats_taken":0,"seats_left":3,
			"starts_at":"2026-04-01T17:00:00Z","teacher_id":"t-1"}`, r.body)
		c, err := f.mem.Classes.Get(f.ctx, "class-1")
		require.NoError(t, err)
		require.Equal(t, "t-1", c.TeacherID(), "the owner is the caller")
	})

	valid := func(except, value string) string {
		fields := map[string]string{"title": `"Go"`, "capacity": `3`, "starts_at": `"2026-04-01T17:00:00Z"`}
		var parts []string
		for _, k := range []string{"title", "capacity", "starts_at"} {
			if k == except {
				if value != "" {
					parts = append(parts, `"`+k+`":`+value)
				}
				continue
			}
			parts = append(parts, `"`+k+`":`+fields[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	tests := []errorCase{
		{name: "no title", body: valid("title", ""), wantStatus: 400, wantCode: "validation_failed", wantField: "title"},
		{name: "blank title", body: valid("title", `"   "`), wantStatus: 400, wantCode: "validation_failed", wantField: "title"},
		{name: "null title", body: valid("title", `null`), wantStatus: 400, wantCode: "validation_failed", wantField: "title"},
		{name: "long title", body: valid("title", `"`+strings.Repeat("x", 201)+`"`), wantStatus: 400, wantCode: "validation_failed", wantField: "title"},
		{name: "title not a string", body: valid("title", `42`), wantStatus: 400, wantCode: "validation_failed", wantField: "title"},
		{name: "no capacity", body: valid("capacity", ""), wantStatus: 400, wantCode: "validation_failed", wantField: "capacity"},
		{name: "capacity 0", body: valid("capacity", `0`), wantStatus: 400, wantCode: "validation_failed", wantField: "capacity"},
		{name: "capacity 10001", body: valid("capacity", `10001`), wantStatus: 400, wantCode: "validation_failed", wantField: "capacity"},
		{name: "capacity fractional", body: valid("capacity", `1.5`), wantStatus: 400, wantCode: "validation_failed", wantField: "capacity"},
		{name: "capacity a string", body: valid("capacity", `"3"`), wantStatus: 400, wantCode: "validation_failed", wantField: "capacity"},
		{name: "capacity huge", body: valid("capacity", `1e400`), wantStatus: 400, wantCode: "validation_failed", wantField: "capacity"},
		{name: "no starts_at", body: valid("starts_at", ""), wantStatus: 400, wantCode: "validation_failed", wantField: "starts_at"},
		{name: "starts_at not RFC 3339", body: valid("starts_at", `"1 April 2026"`), wantStatus: 400, wantCode: "validation_failed", wantField: "starts_at"},
		{name: "starts_at without zone", body: valid("starts_at", `"2026-04-01T17:00:00"`), wantStatus: 400, wantCode: "validation_failed", wantField: "starts_at"},
		{name: "unknown field", body: `{"title":"Go","capacity":3,"starts_at":"2026-04-01T17:00:00Z","room":"B"}`, wantStatus: 400, wantCode: "validation_failed", wantField: "room"},
		{name: "identity is never from the body", body: `{"title":"Go","capacity":3,"starts_at":"2026-04-01T17:00:00Z","teacher_id":"t-2"}`, wantStatus: 400, wantCode: "validation_failed", wantField: "teacher_id"},
		{name: "field names are case-sensitive", body: `{"Title":"Go","capacity":3,"starts_at":"2026-04-01T17:00:00Z"}`, wantStatus: 400, wantCode: "validation_failed", wantField: "Title"},
		{name: "duplicate field", body: `{"title":"Go","title":"Rust","capacity":3,"starts_at":"2026-04-01T17:00:00Z"}`, wantStatus: 400, wantCode: "validation_failed", wantField: "title"},
		{name: "empty body", body: ``, wantStatus: 400, wantCode: "validation_failed", wantField: "title"},
		{name: "not an object", body: `[{"title":"Go"}]`, wantStatus: 400, wantCode: "validation_failed", wantField: "body"},
		{name: "JSON null", body: `null`, wantStatus: 400, wantCode: "validation_failed", wantField: "body"},
		{name: "invalid JSON", body: `{"title":"Go",`, wantStatus: 400, wantCode: "invalid_json"},
		{name: "trailing data", body: `{"title":"Go"} {}`, wantStatus: 400, wantCode: "invalid_json"},
		{name: "too large", body: `{"title":"` + strings.Repeat("x", 64<<10) + `"}`, wantStatus: 413, wantCode: "payload_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			tt.check(t, f.do("POST", "/classes", teacher, tt.body))
			_, err := f.mem.Classes.Get(f.ctx, "class-1")
			require.ErrorIs(t, err, club.ErrClassNotFound, "nothing was created")
		})
	}
}

func TestBodyLimitIsExactly64KiB(t *testing.T) {
	t.Parallel()
	f := setup(t)
	pad := func(n int) string { // a valid profile body of exactly n bytes
		base := `{"email":"ann@example.com","display_name":""}`
		return base[:len(base)-2] + strings.Repeat(" ", n-len(base)) + `"}`
	}
	r := f.do("PUT", "/me/profile", student, pad(64<<10))
	require.Equal(t, 400, r.status, "64 KiB is accepted and then validated")
	require.Equal(t, "validation_failed", r.errorCode())
	r = f.do("PUT", "/me/profile", student, pad(64<<10+1))
	require.Equal(t, 413, r.status)
	require.Equal(t, "payload_too_large", r.errorCode())
}

func TestBase64Bodies(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ev := event("PUT", "/me/profile", student, "eyJlbWFpbCI6ImFubkBleGFtcGxlLmNvbSIsImRpc3BsYXlfbmFtZSI6IkFubiJ9", nil)
	ev.IsBase64Encoded = true
	r := f.handle(ev)
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, "Ann", r.str("display_name"))

	ev.Body = "not base64!"
	r = f.handle(ev)
	require.Equal(t, 400, r.status)
	require.Equal(t, "invalid_json", r.errorCode())

	ev.Body = strings.Repeat("QUFB", 30000) // 90000 bytes once decoded
	r = f.handle(ev)
	require.Equal(t, 413, r.status)
}

func TestGetClass(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.createClass(teacher, 2)
	require.Equal(t, 201, f.enroll(student, id, "key-00000001").status)

	r := f.do("GET", "/classes/"+id, otherStudent, "")
	require.Equal(t, 200, r.status, r.body)
	require.JSONEq(t, `{"class_id":"class-1","title":"Go","capacity":2,"seats_taken":1,"seats_left":1,
		"starts_at":"2026-04-01T17:00:00Z","teacher_id":"t-1"}`, r.body)

	for _, path := range []string{"/classes/nope", "/classes/a%20b", "/classes/" + strings.Repeat("c", 129), "/classes/%C3%A9"} {
		r := f.do("GET", path, student, "")
		require.Equal(t, 404, r.status, path)
		require.Equal(t, "class_not_found", r.errorCode(), path)
	}
}

func TestEnroll(t *testing.T) {
	t.Parallel()

	t.Run("created, answered at once, replayed", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		id := f.createClass(teacher, 3)
		first := f.enroll(student, id, "key-00000001")
		require.Equal(t, 201, first.status, first.body)
		require.NotEmpty(t, first.str("enrollment_id"))
		require.Equal(t, id, first.str("class_id"))
		require.Equal(t, "s-1", first.str("student_id"))
		require.Equal(t, "enrolled", first.str("status"))
		_, err := time.Parse(time.RFC3339, first.str("created_at"))
		require.NoError(t, err)
		require.Equal(t, map[string]any{"status": "pending", "attempts": 0.0}, first.doc["notification"])
		require.Empty(t, first.headers["Idempotent-Replayed"])

		for _, body := range []string{"", "{}", " { } "} {
			again := f.do("POST", "/classes/"+id+"/enrollments", student, body, "Idempotency-Key", "key-00000001")
			require.Equal(t, 201, again.status)
			require.Equal(t, first.body, again.body, "the original body, byte for byte")
			require.Equal(t, "true", again.headers["Idempotent-Replayed"])
		}
		require.Equal(t, 1, f.seatsTaken(id), "no second seat")
		require.Equal(t, 1, f.outboxCount(), "no second event")

		other := f.createClass(teacher, 3)
		r := f.enroll(student, other, "key-00000001")
		require.Equal(t, 422, r.status)
		require.Equal(t, "idempotency_key_reused", r.errorCode())
		require.Equal(t, 0, f.seatsTaken(other))

		r = f.enroll(student, id, "key-00000002")
		require.Equal(t, 409, r.status)
		require.Equal(t, "already_enrolled", r.errorCode())

		r = f.enroll(otherStudent, id, "key-00000001")
		require.Equal(t, 201, r.status, "keys are scoped by caller")
		require.Equal(t, 2, f.seatsTaken(id))
		require.Equal(t, 2, f.outboxCount())
	})

	t.Run("last seat", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		id := f.createClass(teacher, 1)
		require.Equal(t, 201, f.enroll(student, id, "key-00000001").status)
		r := f.enroll(otherStudent, id, "key-00000001")
		require.Equal(t, 409, r.status)
		require.Equal(t, "class_full", r.errorCode())
		require.Equal(t, 1, f.seatsTaken(id))
	})

	long := strings.Repeat("k", 129)
	tests := []errorCase{
		{name: "no key", wantStatus: 400, wantCode: "idempotency_key_required"},
		{name: "short key", headers: []string{"Idempotency-Key", "1234567"}, wantStatus: 400, wantCode: "idempotency_key_required"},
		{name: "long key", headers: []string{"Idempotency-Key", long}, wantStatus: 400, wantCode: "idempotency_key_required"},
		{name: "key with a space", headers: []string{"Idempotency-Key", "key 00000001"}, wantStatus: 400, wantCode: "idempotency_key_required"},
		{name: "key before body", body: `{`, wantStatus: 400, wantCode: "idempotency_key_required"},
		{name: "header name in any case", headers: []string{"IDEMPOTENCY-KEY", "key-00000001"}, body: `{"seat":1}`, wantStatus: 400, wantCode: "validation_failed", wantField: "seat"},
		{name: "unknown field", headers: []string{"Idempotency-Key", "key-00000001"}, body: `{"student_id":"s-2"}`, wantStatus: 400, wantCode: "validation_failed", wantField: "student_id"},
		{name: "invalid JSON", headers: []string{"Idempotency-Key", "key-00000001"}, body: `{]`, wantStatus: 400, wantCode: "invalid_json"},
		{name: "not an object", headers: []string{"Idempotency-Key", "key-00000001"}, body: `"hello"`, wantStatus: 400, wantCode: "validation_failed", wantField: "body"},
		{name: "too large", headers: []string{"Idempotency-Key", "key-00000001"}, body: strings.Repeat(" ", 64<<10+1), wantStatus: 413, wantCode: "payload_too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			id := f.createClass(teacher, 3)
			tt.check(t, f.do("POST", "/classes/"+id+"/enrollments", student, tt.body, tt.headers...))
			require.Equal(t, 0, f.seatsTaken(id))
			require.Equal(t, 0, f.outboxCount())
		})
	}

	t.Run("unknown class", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		r := f.enroll(student, "no-such-class", "key-00000001")
		require.Equal(t, 404, r.status)
		require.Equal(t, "class_not_found", r.errorCode())
	})
}

func TestFirstEnrollmentCreatesTheProfile(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.createClass(teacher, 3)
	require.Equal(t, 201, f.enroll(student, id, "key-00000001").status)
	p, err := f.mem.Profiles.Get(f.ctx, "s-1")
	require.NoError(t, err)
	require.Equal(t, "ann@example.com", p.Email, "from the token's email claim")

	r := f.do("PUT", "/me/profile", otherStudent, `{"email":"bob@example.org","display_name":"Bob"}`)
	require.Equal(t, 200, r.status)
	require.Equal(t, 201, f.enroll(otherStudent, id, "key-00000001").status)
	p, err = f.mem.Profiles.Get(f.ctx, "s-2")
	require.NoError(t, err)
	require.Equal(t, "bob@example.org", p.Email, "an existing profile is kept")
}

func TestGetEnrollment(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.createClass(teacher, 3)
	created := f.enroll(student, id, "key-00000001")
	eid := created.str("enrollment_id")

	for _, who := range []caller{student, teacher} {
		r := f.do("GET", "/enrollments/"+eid, who, "")
		require.Equal(t, 200, r.status, r.body)
		require.JSONEq(t, created.body, r.body, "the same representation as the create answer")
	}
	for _, who := range []caller{otherStudent, otherTeacher, operator, stranger} {
		r := f.do("GET", "/enrollments/"+eid, who, "")
		require.Equal(t, 404, r.status, who.sub)
		require.Equal(t, "not_found", r.errorCode(), "indistinguishable from a missing one")
	}
	r := f.do("GET", "/enrollments/no-such-enrollment", student, "")
	require.Equal(t, 404, r.status)
	require.Equal(t, "not_found", r.errorCode())

	sentAt := time.Date(2026, 3, 1, 10, 0, 5, 0, time.UTC)
	_, err := f.mem.Enrollments.UpdateNotification(f.ctx, eid, func(n *enrollment.Notification) error {
		if err := n.BeginAttempt(); err != nil {
			return err
		}
		n.MarkSent(sentAt)
		return nil
	})
	require.NoError(t, err)
	r = f.do("GET", "/enrollments/"+eid, student, "")
	require.Equal(t, map[string]any{"status": "sent", "attempts": 1.0, "sent_at": "2026-03-01T10:00:05Z"}, r.doc["notification"])
}

func TestCancelEnrollment(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.createClass(teacher, 1)
	eid := f.enroll(student, id, "key-00000001").str("enrollment_id")

	r := f.do("DELETE", "/enrollments/"+eid, otherStudent, "")
	require.Equal(t, 404, r.status)
	require.Equal(t, "not_found", r.errorCode())
	r = f.do("DELETE", "/enrollments/"+eid, teacher, "")
	require.Equal(t, 403, r.status, "teachers do not cancel for students")
	require.Equal(t, "forbidden", r.errorCode())
	require.Equal(t, 1, f.seatsTaken(id), "refusals change nothing")

	r = f.do("DELETE", "/enrollments/"+eid, student, "")
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, "cancelled", r.str("status"))
	require.Equal(t, eid, r.str("enrollment_id"))
	_, err := time.Parse(time.RFC3339, r.str("cancelled_at"))
	require.NoError(t, err)
	require.Equal(t, 0, f.seatsTaken(id), "the seat is free")
	require.Equal(t, 2, f.outboxCount(), "enrollment.cancelled was written")

	again := f.do("DELETE", "/enrollments/"+eid, student, "")
	require.Equal(t, 200, again.status)
	require.JSONEq(t, r.body, again.body)
	require.Equal(t, 2, f.outboxCount(), "a second cancel emits nothing")

	require.Equal(t, 201, f.enroll(otherStudent, id, "key-00000002").status, "the freed seat can be taken")
	require.Equal(t, 409, f.enroll(student, id, "key-00000003").status, "and is gone again")
}

func TestRosterAndStats(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.createClass(teacher, 3)

	r := f.do("GET", "/classes/"+id+"/roster", teacher, "")
	require.Equal(t, 200, r.status, r.body)
	require.JSONEq(t, `{"class_id":"class-1","students":[],"as_of":null}`, r.body)
	r = f.do("GET", "/classes/"+id+"/stats", teacher, "")
	require.JSONEq(t, `{"class_id":"class-1","enrollments_total":0,"cancellations_total":0}`, r.body)

	require.Equal(t, 201, f.enroll(student, id, "key-00000001").status)
	bob := f.enroll(otherStudent, id, "key-00000001")
	require.Equal(t, 200, f.do("DELETE", "/enrollments/"+bob.str("enrollment_id"), otherStudent, "").status)
	f.project()

	r = f.do("GET", "/classes/"+id+"/roster", teacher, "")
	require.Equal(t, 200, r.status)
	students := r.doc["students"].([]any)
	require.Len(t, students, 1)
	require.Equal(t, "s-1", students[0].(map[string]any)["student_id"])
	require.NotEmpty(t, students[0].(map[string]any)["enrolled_at"])
	require.NotNil(t, r.doc["as_of"])
	r = f.do("GET", "/classes/"+id+"/stats", teacher, "")
	require.JSONEq(t, `{"class_id":"class-1","enrollments_total":2,"cancellations_total":1}`, r.body)

	for _, path := range []string{"/classes/" + id + "/roster", "/classes/" + id + "/stats"} {
		r := f.do("GET", path, otherTeacher, "")
		require.Equal(t, 404, r.status, "another teacher's class")
		require.Equal(t, "not_found", r.errorCode())
		r = f.do("GET", path, student, "")
		require.Equal(t, 403, r.status, "students do not read rosters")
		require.Equal(t, "forbidden", r.errorCode())
	}
	r = f.do("GET", "/classes/nope/stats", teacher, "")
	require.Equal(t, 404, r.status)
	require.Equal(t, "class_not_found", r.errorCode())
}

func TestPutProfile(t *testing.T) {
	t.Parallel()
	t.Run("replaces the caller's profile", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		for _, body := range []string{
			`{"email":"ann@example.com","display_name":"Ann"}`,
			`{"display_name":" Ann L. ","email":"ann@example.org"}`,
		} {
			r := f.do("PUT", "/me/profile", student, body)
			require.Equal(t, 200, r.status, r.body)
		}
		p, err := f.mem.Profiles.Get(f.ctx, "s-1")
		require.NoError(t, err)
		require.Equal(t, "ann@example.org", p.Email)
		require.Equal(t, "Ann L.", p.DisplayName)
		r := f.do("PUT", "/me/profile", teacher, `{"email":"tina@example.com","display_name":"Tina"}`)
		require.JSONEq(t, `{"student_id":"t-1","email":"tina@example.com","display_name":"Tina"}`, r.body)
	})

	tests := []errorCase{
		{name: "no email", body: `{"display_name":"Ann"}`, wantStatus: 400, wantCode: "validation_failed", wantField: "email"},
		{name: "not an address", body: `{"email":"ann","display_name":"Ann"}`, wantStatus: 400, wantCode: "validation_failed", wantField: "email"},
		{name: "address with a name", body: `{"email":"Ann <ann@example.com>","display_name":"Ann"}`, wantStatus: 400, wantCode: "validation_failed", wantField: "email"},
		{name: "email not a string", body: `{"email":["ann@example.com"],"display_name":"Ann"}`, wantStatus: 400, wantCode: "validation_failed", wantField: "email"},
		{name: "no display name", body: `{"email":"ann@example.com"}`, wantStatus: 400, wantCode: "validation_failed", wantField: "display_name"},
		{name: "long display name", body: `{"email":"ann@example.com","display_name":"` + strings.Repeat("я", 101) + `"}`, wantStatus: 400, wantCode: "validation_failed", wantField: "display_name"},
		{name: "identity is never from the body", body: `{"student_id":"s-2","email":"ann@example.com","display_name":"Ann"}`, wantStatus: 400, wantCode: "validation_failed", wantField: "student_id"},
		{name: "invalid JSON", body: `{"email":}`, wantStatus: 400, wantCode: "invalid_json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			tt.check(t, f.do("PUT", "/me/profile", student, tt.body))
			_, err := f.mem.Profiles.Get(f.ctx, "s-1")
			require.ErrorIs(t, err, club.ErrNotFound)
		})
	}
}

func TestFallback(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tests := []struct {
		method, path string
		wantStatus   int
		wantCode     string
		wantAllow    string
	}{
		{"GET", "/", 404, "route_not_found", ""},
		{"GET", "/nope", 404, "route_not_found", ""},
		{"GET", "/classes/", 404, "route_not_found", ""},
		{"GET", "/classes//roster", 404, "route_not_found", ""},
		{"GET", "/classes/c-1/roster/extra", 404, "route_not_found", ""},
		{"GET", "/enrollments", 404, "route_not_found", ""},
		{"GET", "/Classes/c-1", 404, "route_not_found", ""},
		{"GET", "/classes/%zz", 404, "route_not_found", ""},
		{"GET", "", 404, "route_not_found", ""},
		{"GET", "classes", 404, "route_not_found", ""},
		{"PATCH", "/classes", 405, "method_not_allowed", "POST"},
		{"GET", "/classes", 405, "method_not_allowed", "POST"},
		{"POST", "/me/profile", 405, "method_not_allowed", "PUT"},
		{"PUT", "/enrollments/e-1", 405, "method_not_allowed", "DELETE, GET"},
		{"get", "/healthz", 405, "method_not_allowed", "GET"},
		{"", "/healthz", 405, "method_not_allowed", "GET"},
	}
	for _, tt := range tests {
		r := f.do(tt.method, tt.path, student, "")
		require.Equal(t, tt.wantStatus, r.status, "%s %s", tt.method, tt.path)
		require.Equal(t, tt.wantCode, r.errorCode(), "%s %s", tt.method, tt.path)
		require.Equal(t, tt.wantAllow, r.headers["Allow"], "%s %s", tt.method, tt.path)
	}
}

func TestUnauthorized(t *testing.T) {
	t.Parallel()
	f := setup(t)
	noSub := caller{groups: "[teacher]", email: "tina@example.com"}
	controlChars := caller{sub: "t-1\n", groups: "[teacher]"}
	for _, who := range []caller{anonymous, noSub, controlChars, {sub: strings.Repeat("u", 257), groups: "[teacher]"}} {
		for _, req := range [][2]string{
			{"POST", "/classes"}, {"GET", "/classes/c-1"}, {"POST", "/classes/c-1/enrollments"},
			{"GET", "/classes/c-1/roster"}, {"GET", "/classes/c-1/stats"}, {"GET", "/enrollments/e-1"},
			{"DELETE", "/enrollments/e-1"}, {"PUT", "/me/profile"},
		} {
			r := f.do(req[0], req[1], who, `{}`)
			require.Equal(t, 401, r.status, "%s %s", req[0], req[1])
			require.Equal(t, "unauthorized", r.errorCode())
		}
	}
	ev := event("GET", "/classes/c-1", teacher, "", nil)
	ev.RequestContext.Authorizer.JWT = nil
	require.Equal(t, 401, f.handle(ev).status, "an authorizer without JWT claims")
}

func TestGroupsClaimForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		groups     string
		wantStatus int
	}{
		{"[teacher]", 201},
		{"[student teacher]", 201},
		{`["student","teacher"]`, 201},
		{`["teacher"]`, 201},
		{"teacher", 201},
		{"student,teacher", 201},
		{"[student]", 403},
		{`["operator"]`, 403},
		{"[teachers]", 403},
		{"[Teacher]", 403},
		{"", 403},
		{"[]", 403},
		{`[{"teacher":true}]`, 403},
	}
	for _, tt := range tests {
		t.Run(tt.groups, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			r := f.do("POST", "/classes", caller{sub: "t-9", groups: tt.groups}, `{"title":"Go","capacity":3,"starts_at":"2026-04-01T17:00:00Z"}`)
			require.Equal(t, tt.wantStatus, r.status, r.body)
		})
	}
}

// ports that fail, to reach the edges of the error mapping.
type failingEnrollments struct {
	err   error
	panic bool
}

func (f failingEnrollments) Enroll(context.Context, enrollment.EnrollRequest) (enrollment.EnrollResult, error) {
	if f.panic {
		panic("a bug")
	}
	return enrollment.EnrollResult{}, f.err
}

func (f failingEnrollments) Get(context.Context, string, string) (enrollment.Enrollment, error) {
	return enrollment.Enrollment{}, f.err
}

func (f failingEnrollments) Cancel(context.Context, string, string) (enrollment.Enrollment, error) {
	return enrollment.Enrollment{}, f.err
}

type failingProfiles struct{ err error }

func (f failingProfiles) Put(context.Context, profile.Profile) error { return f.err }

func TestInfrastructureFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		enrollments    failingEnrollments
		wantStatus     int
		wantCode       string
		wantRetryAfter string
		wantLog        string
	}{
		{"contention is transient, and not a 5xx", failingEnrollments{err: club.ErrContention}, 429, "contention", "1", ""},
		{"an unknown failure is internal", failingEnrollments{err: context.DeadlineExceeded}, 500, "internal", "", "context deadline exceeded"},
		{"a panic is internal", failingEnrollments{panic: true}, 500, "internal", "", "panic: a bug"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, func(d *api.Deps) { d.Enrollments = tt.enrollments })
			r := f.enroll(student, "c-1", "key-00000001")
			require.Equal(t, tt.wantStatus, r.status)
			require.Equal(t, tt.wantCode, r.errorCode())
			require.Equal(t, tt.wantRetryAfter, r.headers["Retry-After"])
			require.NotContains(t, r.body, "a bug", "causes stay in the log")
			require.NotContains(t, r.body, "deadline")
			if tt.wantLog != "" {
				require.Contains(t, f.logs.String(), tt.wantLog)
				require.Contains(t, f.logs.String(), `"level":"ERROR"`)
			}
		})
	}

	f := setup(t, func(d *api.Deps) { d.Profiles = failingProfiles{err: context.Canceled} })
	r := f.do("PUT", "/me/profile", student, `{"email":"ann@example.com","display_name":"Ann"}`)
	require.Equal(t, 500, r.status)
	require.Equal(t, "internal", r.errorCode())
}

func TestNewChecksDeps(t *testing.T) {
	t.Parallel()
	_, err := api.New(api.Deps{})
	for _, want := range []string{"Classes", "Enrollments", "Projections", "Profiles", "Purchases", "Webhooks", "Operations"} {
		require.ErrorContains(t, err, want)
	}
}
