package events_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/events/examples"
)

// canonical re-encodes JSON with sorted keys so that two documents can be
// compared regardless of formatting.
func canonical(t *testing.T, b []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return string(out)
}

// TestExamplesRoundTrip is the golden test of the contract: every stored
// example decodes, its payload matches the Go type exactly (no field the type
// lacks), and encoding the typed values gives back the same document.
func TestExamplesRoundTrip(t *testing.T) {
	t.Parallel()
	for _, ex := range examples.All() {
		t.Run(ex.Name, func(t *testing.T) {
			t.Parallel()
			env, err := events.Decode(ex.JSON)
			require.NoError(t, err)
			require.Equal(t, events.Type(ex.Type), env.Type)
			require.Equal(t, ex.Version, env.SchemaVersion)

			p, err := env.Payload()
			require.NoError(t, err)

			// Strict decoding: the example must not carry fields the Go type
			// does not know, or the round trip below would silently drop them.
			strict := reflect.New(reflect.TypeOf(p))
			dec := json.NewDecoder(bytes.NewReader(env.Data))
			dec.DisallowUnknownFields()
			require.NoError(t, dec.Decode(strict.Interface()), "example has fields its Go type lacks")

			data, err := json.Marshal(p)
			require.NoError(t, err)
			require.Equal(t, canonical(t, env.Data), canonical(t, data), "payload does not round-trip")

			whole, err := json.Marshal(env)
			require.NoError(t, err)
			require.Equal(t, canonical(t, ex.JSON), canonical(t, whole), "envelope does not round-trip")
		})
	}
}

// TestEveryVersionHasAnExample fails when a version is added to the registry
// without a stored example, or an example is stored for a version nobody reads.
func TestEveryVersionHasAnExample(t *testing.T) {
	t.Parallel()
	stored := map[string]bool{}
	for _, ex := range examples.All() {
		stored[fmt.Sprintf("%s.v%d", ex.Type, ex.Version)] = true
	}
	supported := map[string]bool{}
	for _, tv := range events.Supported() {
		supported[tv.String()] = true
		require.True(t, stored[tv.String()], "no example for %s in events/examples", tv)
	}
	for name := range stored {
		require.True(t, supported[name], "example %s is for a version this build does not read", name)
	}
}

func TestEveryTypeHasKindAndCurrentVersion(t *testing.T) {
	t.Parallel()
	for _, tv := range events.Supported() {
		kind, ok := events.KindOf(tv.Type)
		require.True(t, ok)
		require.Contains(t, []events.Kind{events.KindEvent, events.KindJob, events.KindWorkflow}, kind)
		cur, ok := events.CurrentVersion(tv.Type)
		require.True(t, ok)
		require.GreaterOrEqual(t, cur, tv.Version, "%s is newer than the version written", tv)
	}
	kind, _ := events.KindOf(events.TypeExportRequested)
	require.Equal(t, events.KindJob, kind)
	kind, _ = events.KindOf(events.TypePurchaseRequested)
	require.Equal(t, events.KindWorkflow, kind)
	_, ok := events.KindOf("no.such")
	require.False(t, ok)
}

// TestNoPersonalData guards the rule that events carry ids, not personal data.
func TestNoPersonalData(t *testing.T) {
	t.Parallel()
	forbidden := []string{"email", "e_mail", "name", "display_name", "address", "phone"}
	payloads := []events.Payload{
		events.EnrollmentCreated{}, events.EnrollmentCancelled{},
		events.PurchaseRequested{}, events.ExportRequested{},
	}
	for _, p := range payloads {
		typ := reflect.TypeOf(p)
		for i := range typ.NumField() {
			tag := strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]
			for _, f := range forbidden {
				require.NotContains(t, tag, f, "%s.%s looks like personal data", typ.Name(), typ.Field(i).Name)
			}
		}
	}
	for _, ex := range examples.All() {
		require.NotContains(t, string(ex.JSON), "@", "%s contains something like an e-mail address", ex.Name)
	}
}

func validEnvelope() map[string]any {
	return map[string]any{
		"event_id":       "0b6f3f4e-8f7c-4c1e-9a53-6f0d2c1b7a10",
		"type":           "enrollment.cancelled",
		"schema_version": 1,
		"aggregate_id":   "e-1",
		"occurred_at":    "2026-03-01T10:00:00Z",
		"data":           map[string]any{"enrollment_id": "e-1", "class_id": "c-1", "student_id": "s-1"},
	}
}

func TestDecodeClassifiesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		mutate  func(m map[string]any)
		raw     string // used instead of the mutated envelope when set
		want    error
		wantMsg string
	}{
		{name: "valid", mutate: func(map[string]any) {}},
		{name: "not json", raw: `{"event_id":`, want: events.ErrMalformed},
		{name: "array", raw: `[1,2]`, want: events.ErrMalformed},
		{name: "missing event_id", mutate: func(m map[string]any) { delete(m, "event_id") }, want: events.ErrMalformed, wantMsg: "event_id"},
		{name: "event_id not uuid", mutate: func(m map[string]any) { m["event_id"] = "42" }, want: events.ErrMalformed, wantMsg: "UUID"},
		{name: "missing type", mutate: func(m map[string]any) { delete(m, "type") }, want: events.ErrMalformed, wantMsg: "type"},
		{name: "missing version", mutate: func(m map[string]any) { delete(m, "schema_version") }, want: events.ErrMalformed, wantMsg: "schema_version"},
		{name: "version not a number", mutate: func(m map[string]any) { m["schema_version"] = "1" }, want: events.ErrMalformed},
		{name: "missing aggregate", mutate: func(m map[string]any) { m["aggregate_id"] = "" }, want: events.ErrMalformed, wantMsg: "aggregate_id"},
		{name: "missing occurred_at", mutate: func(m map[string]any) { delete(m, "occurred_at") }, want: events.ErrMalformed, wantMsg: "occurred_at"},
		{name: "bad occurred_at", mutate: func(m map[string]any) { m["occurred_at"] = "yesterday" }, want: events.ErrMalformed, wantMsg: "RFC 3339"},
		{name: "missing data", mutate: func(m map[string]any) { delete(m, "data") }, want: events.ErrMalformed, wantMsg: "data"},
		{name: "null data", mutate: func(m map[string]any) { m["data"] = nil }, want: events.ErrMalformed, wantMsg: "data"},
		{name: "data not an object", mutate: func(m map[string]any) { m["data"] = []int{1} }, want: events.ErrMalformed},
		{name: "data field missing", mutate: func(m map[string]any) { delete(m["data"].(map[string]any), "class_id") }, want: events.ErrMalformed, wantMsg: "class_id"},
		{name: "data field wrong type", mutate: func(m map[string]any) { m["data"].(map[string]any)["class_id"] = 7 }, want: events.ErrMalformed},
		{name: "aggregate does not match data", mutate: func(m map[string]any) { m["aggregate_id"] = "e-2" }, want: events.ErrMalformed, wantMsg: "does not match"},
		{name: "unknown type", mutate: func(m map[string]any) { m["type"] = "enrollment.teleported" }, want: events.ErrUnknownType},
		{name: "unknown type wins over bad data", mutate: func(m map[string]any) { m["type"] = "x.y"; m["data"] = []int{} }, want: events.ErrUnknownType},
		{name: "future major version", mutate: func(m map[string]any) { m["schema_version"] = 3 }, want: events.ErrUnsupportedVersion, wantMsg: "version 3"},
		{name: "version zero", mutate: func(m map[string]any) { m["schema_version"] = 0 }, want: events.ErrUnsupportedVersion},
		{name: "unknown data field is ignored", mutate: func(m map[string]any) { m["data"].(map[string]any)["seat_row"] = "B" }},
		{name: "unknown envelope field is ignored", mutate: func(m map[string]any) { m["trace_id"] = "abc" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := []byte(tt.raw)
			if tt.raw == "" {
				m := validEnvelope()
				tt.mutate(m)
				var err error
				b, err = json.Marshal(m)
				require.NoError(t, err)
			}
			_, err := events.Decode(b)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.want)
			for _, other := range []error{events.ErrMalformed, events.ErrUnknownType, events.ErrUnsupportedVersion} {
				if other != tt.want {
					require.NotErrorIs(t, err, other, "an error has exactly one class")
				}
			}
			require.Contains(t, err.Error(), tt.wantMsg)
		})
	}
}

func TestDecodeVersionOneIgnoresVersionTwoField(t *testing.T) {
	t.Parallel()
	b := []byte(`{"event_id":"0b6f3f4e-8f7c-4c1e-9a53-6f0d2c1b7a10","type":"enrollment.created","schema_version":1,
		"aggregate_id":"e-1","occurred_at":"2026-03-01T10:00:00+02:00",
		"data":{"enrollment_id":"e-1","class_id":"c-1","student_id":"s-1","class_starts_at":"2026-04-01T10:00:00Z"}}`)
	env, err := events.Decode(b)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC), env.OccurredAt, "occurred_at is normalised to UTC")
	p, err := env.EnrollmentCreated()
	require.NoError(t, err)
	require.Nil(t, p.ClassStartsAt, "version 1 has no class_starts_at")
}

func TestNew(t *testing.T) {
	t.Parallel()
	id := events.NewID()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	starts := time.Date(2026, 4, 1, 17, 0, 0, 0, time.UTC)
	env, err := events.New(id, at, events.EnrollmentCreated{
		EnrollmentID: "e-1", ClassID: "c-1", StudentID: "s-1", ClassStartsAt: &starts,
	})
	require.NoError(t, err)
	require.Equal(t, id, env.EventID)
	require.Equal(t, events.TypeEnrollmentCreated, env.Type)
	require.Equal(t, 2, env.SchemaVersion, "New writes the current version")
	require.Equal(t, "e-1", env.AggregateID)
	require.Equal(t, time.UTC, env.OccurredAt.Location())
	require.True(t, at.Equal(env.OccurredAt))

	b, err := json.Marshal(env)
	require.NoError(t, err)
	back, err := events.Decode(b)
	require.NoError(t, err, "what New writes, Decode reads")
	require.Equal(t, env.Fingerprint(), back.Fingerprint())
	p, err := back.EnrollmentCreated()
	require.NoError(t, err)
	require.Equal(t, starts, *p.ClassStartsAt)

	_, err = back.EnrollmentCancelled()
	require.ErrorIs(t, err, events.ErrWrongType)
}

// A teacher report is an export job that names no class: it round-trips
// without a class_id field.
func TestTeacherReportJob(t *testing.T) {
	t.Parallel()
	env, err := events.New(events.NewID(), time.Now(), events.ExportRequested{
		OperationID: "op-1", Kind: events.ExportKindTeacherReport, RequestedBy: "teacher-1",
	})
	require.NoError(t, err)
	require.NotContains(t, string(env.Data), "class_id")
	b, err := json.Marshal(env)
	require.NoError(t, err)
	back, err := events.Decode(b)
	require.NoError(t, err)
	job, err := back.ExportRequested()
	require.NoError(t, err)
	require.Equal(t, events.ExportRequested{OperationID: "op-1", Kind: events.ExportKindTeacherReport, RequestedBy: "teacher-1"}, job)
}

func TestNewRejectsInvalidInput(t *testing.T) {
	t.Parallel()
	valid := events.EnrollmentCancelled{EnrollmentID: "e", ClassID: "c", StudentID: "s"}
	now := time.Now()
	tests := []struct {
		name string
		id   string
		at   time.Time
		p    events.Payload
	}{
		{"id not uuid", "e-1", now, valid},
		{"zero time", events.NewID(), time.Time{}, valid},
		{"missing field", events.NewID(), now, events.EnrollmentCancelled{EnrollmentID: "e", ClassID: "c"}},
		{"bad amount", events.NewID(), now, events.PurchaseRequested{PurchaseID: "p", IntensiveID: "i", StudentID: "s", Currency: "EUR", HoldExpiresAt: now}},
		{"bad currency", events.NewID(), now, events.PurchaseRequested{PurchaseID: "p", IntensiveID: "i", StudentID: "s", Currency: "EURO", AmountCents: 1, HoldExpiresAt: now}},
		{"bad export kind", events.NewID(), now, events.ExportRequested{OperationID: "o", Kind: "pdf", ClassID: "c", RequestedBy: "t"}},
		{"roster export without class", events.NewID(), now, events.ExportRequested{OperationID: "o", Kind: events.ExportKindRosterExport, RequestedBy: "t"}},
		{"teacher report with a class", events.NewID(), now, events.ExportRequested{OperationID: "o", Kind: events.ExportKindTeacherReport, ClassID: "c", RequestedBy: "t"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := events.New(tt.id, tt.at, tt.p)
			require.Error(t, err)
		})
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	base := []byte(`{"event_id":"0b6f3f4e-8f7c-4c1e-9a53-6f0d2c1b7a10","type":"enrollment.cancelled","schema_version":1,
		"aggregate_id":"e-1","occurred_at":"2026-03-01T10:00:00Z","data":{"enrollment_id":"e-1","class_id":"c-1","student_id":"s-1"}}`)
	decode := func(b string) events.Envelope {
		env, err := events.Decode([]byte(b))
		require.NoError(t, err)
		return env
	}
	want := decode(string(base)).Fingerprint()
	require.Len(t, want, 64)

	same := map[string]string{
		"reordered and reformatted data": `{"event_id":"0b6f3f4e-8f7c-4c1e-9a53-6f0d2c1b7a10","type":"enrollment.cancelled","schema_version":1,
			"aggregate_id":"e-1","occurred_at":"2026-03-01T10:00:00Z","data":{ "student_id":"s-1", "class_id":"c-1","enrollment_id":"e-1" }}`,
		"other event_id and time (not content)": `{"event_id":"3c1d2e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f","type":"enrollment.cancelled","schema_version":1,
			"aggregate_id":"e-1","occurred_at":"2027-01-01T00:00:00Z","data":{"enrollment_id":"e-1","class_id":"c-1","student_id":"s-1"}}`,
	}
	for name, b := range same {
		require.Equal(t, want, decode(b).Fingerprint(), name)
	}
	differs := map[string]string{
		"other data": `{"event_id":"0b6f3f4e-8f7c-4c1e-9a53-6f0d2c1b7a10","type":"enrollment.cancelled","schema_version":1,
			"aggregate_id":"e-1","occurred_at":"2026-03-01T10:00:00Z","data":{"enrollment_id":"e-1","class_id":"c-2","student_id":"s-1"}}`,
		"other type": `{"event_id":"0b6f3f4e-8f7c-4c1e-9a53-6f0d2c1b7a10","type":"enrollment.created","schema_version":1,
			"aggregate_id":"e-1","occurred_at":"2026-03-01T10:00:00Z","data":{"enrollment_id":"e-1","class_id":"c-1","student_id":"s-1"}}`,
		"other version": `{"event_id":"0b6f3f4e-8f7c-4c1e-9a53-6f0d2c1b7a10","type":"enrollment.created","schema_version":2,
			"aggregate_id":"e-1","occurred_at":"2026-03-01T10:00:00Z","data":{"enrollment_id":"e-1","class_id":"c-1","student_id":"s-1"}}`,
	}
	seen := map[string]string{}
	for name, b := range differs {
		fp := decode(b).Fingerprint()
		require.NotEqual(t, want, fp, name)
		for other, ofp := range seen {
			require.NotEqual(t, ofp, fp, "%s and %s collide", name, other)
		}
		seen[name] = fp
	}

	broken := events.Envelope{Type: events.TypeEnrollmentCancelled, Data: json.RawMessage(`{not json`)}
	require.Len(t, broken.Fingerprint(), 64, "invalid data still fingerprints (raw bytes)")
}
