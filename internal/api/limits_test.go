package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/api"
	"github.com/clubdev/club/internal/club/profile"
)

// snapshot is everything a request of these tests could have written: the
// classes the handler could have created, the fixture class's seats, the
// outbox, the caller's profile and idempotency record.
func (f *fixture) snapshot(classID string, who caller, key string) string {
	f.t.Helper()
	var b strings.Builder
	for i := range 4 { // each test creates class-1 and sends one request
		c, err := f.mem.Classes.Get(f.ctx, fmt.Sprintf("class-%d", i+1))
		fmt.Fprintf(&b, "class-%d: %v %v\n", i+1, c.Snapshot(), err)
	}
	fmt.Fprintf(&b, "seats %d, outbox %d\n", f.seatsTaken(classID), f.outboxCount())
	p, err := f.mem.Profiles.Get(f.ctx, who.sub)
	fmt.Fprintf(&b, "profile %+v %v\n", p, err)
	rec, err := f.mem.Idempotency.Get(f.ctx, who.sub, key)
	fmt.Fprintf(&b, "idempotency %+v %v\n", rec, err)
	return b.String()
}

// TestInputLimits: every limit of docs/principles.md §5 at and beyond its edge. Beyond it
// the answer is 4xx with a stable code, never a 5xx, and nothing is written.
func TestInputLimits(t *testing.T) {
	t.Parallel()
	classBody := func(title, capacity, startsAt string) string {
		return fmt.Sprintf(`{"title":%s,"capacity":%s,"starts_at":%s}`, title, capacity, startsAt)
	}
	const okTitle, okCapacity, okStart = `"Go"`, `3`, `"2026-04-01T17:00:00Z"`
	profileBody := func(email, name string) string {
		b, err := json.Marshal(map[string]string{"email": email, "display_name": name})
		require.NoError(t, err)
		return string(b)
	}
	local64 := strings.Repeat("a", 64)
	email254 := local64 + "@" + strings.Repeat("d", 63) + "." + strings.Repeat("e", 63) + "." + strings.Repeat("f", 61)
	longSub := caller{sub: strings.Repeat("u", 257), groups: "[teacher]"}

	tests := []struct {
		name       string
		who        caller
		method     string
		path       string // {class} is the fixture's class
		body       string
		key        string // Idempotency-Key, "" for none
		wantStatus int
		wantCode   string
		wantField  string
	}{
		// numeric ranges
		{"capacity at the minimum", teacher, "POST", "/classes", classBody(okTitle, `1`, okStart), "", 201, "", ""},
		{"capacity at the maximum", teacher, "POST", "/classes", classBody(okTitle, `10000`, okStart), "", 201, "", ""},
		{"capacity negative", teacher, "POST", "/classes", classBody(okTitle, `-1`, okStart), "", 400, "validation_failed", "capacity"},
		{"capacity beyond int64", teacher, "POST", "/classes", classBody(okTitle, `9223372036854775808`, okStart), "", 400, "validation_failed", "capacity"},
		{"capacity in exponent form", teacher, "POST", "/classes", classBody(okTitle, `1e3`, okStart), "", 400, "validation_failed", "capacity"},
		{"capacity a boolean", teacher, "POST", "/classes", classBody(okTitle, `true`, okStart), "", 400, "validation_failed", "capacity"},
		{"capacity an object", teacher, "POST", "/classes", classBody(okTitle, `{"n":3}`, okStart), "", 400, "validation_failed", "capacity"},
		// dates: valid RFC 3339 that leaves four-digit years once in UTC
		{"starts_at year 10000 in UTC", teacher, "POST", "/classes", classBody(okTitle, okCapacity, `"9999-12-31T23:59:59-23:59"`), "", 400, "validation_failed", "starts_at"},
		{"starts_at year -1 in UTC", teacher, "POST", "/classes", classBody(okTitle, okCapacity, `"0000-01-01T00:00:00+01:00"`), "", 400, "validation_failed", "starts_at"},
		{"starts_at before 2000", teacher, "POST", "/classes", classBody(okTitle, okCapacity, `"1999-12-31T23:59:59Z"`), "", 400, "validation_failed", "starts_at"},
		{"starts_at at the last second", teacher, "POST", "/classes", classBody(okTitle, okCapacity, `"9999-12-31T23:59:59Z"`), "", 201, "", ""},
		{"starts_at with a leap second", teacher, "POST", "/classes", classBody(okTitle, okCapacity, `"2026-06-30T23:59:60Z"`), "", 400, "validation_failed", "starts_at"},
		// string lengths and contents
		{"title of 200 two-byte characters", teacher, "POST", "/classes", classBody(`"`+strings.Repeat("я", 200)+`"`, okCapacity, okStart), "", 201, "", ""},
		{"title of 201 characters", teacher, "POST", "/classes", classBody(`"`+strings.Repeat("я", 201)+`"`, okCapacity, okStart), "", 400, "validation_failed", "title"},
		{"title with a newline", teacher, "POST", "/classes", classBody(`"Go\nbasics"`, okCapacity, okStart), "", 400, "validation_failed", "title"},
		{"title with NUL", teacher, "POST", "/classes", classBody(`"Go\u0000"`, okCapacity, okStart), "", 400, "validation_failed", "title"},
		{"title with an escape sequence", teacher, "POST", "/classes", classBody(`"\u001b[31mGo"`, okCapacity, okStart), "", 400, "validation_failed", "title"},
		{"title with a right-to-left override", teacher, "POST", "/classes", classBody(`"Go \u202eesruoc"`, okCapacity, okStart), "", 400, "validation_failed", "title"},
		{"title padded with white space", teacher, "POST", "/classes", classBody(`" Go\n"`, okCapacity, okStart), "", 201, "", ""},
		{"display name of 100 characters", student, "PUT", "/me/profile", profileBody("ann@example.com", strings.Repeat("n", 100)), "", 200, "", ""},
		{"display name of 101 characters", student, "PUT", "/me/profile", profileBody("ann@example.com", strings.Repeat("n", 101)), "", 400, "validation_failed", "display_name"},
		{"display name with a control character", student, "PUT", "/me/profile", profileBody("ann@example.com", "Ann\u0007"), "", 400, "validation_failed", "display_name"},
		{"display name with a bidi isolate", student, "PUT", "/me/profile", profileBody("ann@example.com", "Ann\u2067"), "", 400, "validation_failed", "display_name"},
		{"e-mail of 254 bytes", student, "PUT", "/me/profile", profileBody(email254, "Ann"), "", 200, "", ""},
		{"e-mail of 255 bytes", student, "PUT", "/me/profile", profileBody("a"+email254, "Ann"), "", 400, "validation_failed", "email"},
		{"e-mail with a newline", student, "PUT", "/me/profile", profileBody("ann@example.com\nBcc: eve@example.com", "Ann"), "", 400, "validation_failed", "email"},
		// headers and ids
		{"key of 8 characters", student, "POST", "/classes/{class}/enrollments", "", "12345678", 201, "", ""},
		{"key of 128 characters", student, "POST", "/classes/{class}/enrollments", "", strings.Repeat("k", 128), 201, "", ""},
		{"key of 129 characters", student, "POST", "/classes/{class}/enrollments", "", strings.Repeat("k", 129), 400, "idempotency_key_required", ""},
		{"key of 64 KiB", student, "POST", "/classes/{class}/enrollments", "", strings.Repeat("k", 64<<10), 400, "idempotency_key_required", ""},
		{"key with non-ASCII", student, "POST", "/classes/{class}/enrollments", "", "ключ-00000001", 400, "idempotency_key_required", ""},
		{"key with a tab", student, "POST", "/classes/{class}/enrollments", "", "key\t00000001", 400, "idempotency_key_required", ""},
		{"class id of 129 characters", student, "POST", "/classes/" + strings.Repeat("c", 129) + "/enrollments", "", "key-00000001", 404, "class_not_found", ""},
		{"enrollment id with a slash", student, "GET", "/enrollments/a%2Fb", "", "", 404, "not_found", ""},
		{"token subject of 257 characters", longSub, "POST", "/classes", classBody(okTitle, okCapacity, okStart), "", 401, "unauthorized", ""},
		// bodies
		{"body of 64 KiB + 1", teacher, "POST", "/classes", classBody(`"`+strings.Repeat("x", 64<<10)+`"`, okCapacity, okStart), "", 413, "payload_too_large", ""},
		{"deeply nested body", teacher, "POST", "/classes", strings.Repeat("[", 20000) + strings.Repeat("]", 20000), "", 400, "invalid_json", ""},
		{"deeply nested member", teacher, "POST", "/classes", `{"title":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`, "", 400, "invalid_json", ""},
		{"many members", teacher, "POST", "/classes", "{" + strings.Repeat(`"title":"Go",`, 3000) + `"capacity":3}`, "", 400, "validation_failed", "title"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			classID := f.createClass(teacher, 3)
			path := strings.ReplaceAll(tt.path, "{class}", classID)
			before := f.snapshot(classID, tt.who, tt.key)

			var headers []string
			if tt.key != "" {
				headers = []string{"Idempotency-Key", tt.key}
			}
			r := f.do(tt.method, path, tt.who, tt.body, headers...)
			require.Equal(t, tt.wantStatus, r.status, r.body)
			if tt.wantStatus < 400 {
				require.NotEqual(t, before, f.snapshot(classID, tt.who, tt.key), "the accepted request wrote")
				return
			}
			require.Equal(t, tt.wantCode, r.errorCode(), r.body)
			require.Equal(t, tt.wantField, r.errorField(), r.body)
			require.Equal(t, before, f.snapshot(classID, tt.who, tt.key), "a refused request writes nothing")
		})
	}
}

// failingProfilesWithAddress answers every write with an error that quotes an address,
// as a storage or provider error may.
type failingProfilesWithAddress struct{}

func (failingProfilesWithAddress) Put(_ context.Context, p profile.Profile) error {
	return fmt.Errorf("put profile %s <%s>: %w", p.UserID, p.Email, errors.New("throttled"))
}

// TestLogsRedactAddressesInErrors: the request log line of a failure carries
// the error's text, and an address inside it is redacted, not dropped.
func TestLogsRedactAddressesInErrors(t *testing.T) {
	t.Parallel()
	f := setup(t, func(d *api.Deps) { d.Profiles = failingProfilesWithAddress{} })
	r := f.do("PUT", "/me/profile", student, `{"email":"ann.private@example.com","display_name":"Ann"}`)
	require.Equal(t, 500, r.status)
	require.NotContains(t, r.body, "ann.private", "causes stay in the log")

	logs := f.logs.String()
	require.Contains(t, logs, `put profile s-1 <a***@example.com>: throttled`, "the cause is logged, redacted")
	require.NotContains(t, logs, "ann.private@example.com")
	require.NotContains(t, logs, "ann@example.com", "nor the token's address")
}
