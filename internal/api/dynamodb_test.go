package api_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/api"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/store"
)

// dynamo talks to one in-process emulator shared by the test binary; each
// test creates its own tables.
var dynamo *dynamodb.Client

func TestMain(m *testing.M) {
	srv := kumo.NewServer()
	dynamo = dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		// kumo's X-Amz-Crc32 does not match its body; the data is fine.
		DisableValidateResponseChecksum: true,
	})
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

var tableSeq atomic.Int64

// setupDynamoDB returns a fixture whose handler is wired exactly as
// functions/api wires it, over the DynamoDB store on fresh tables.
func setupDynamoDB(t *testing.T) (*fixture, *store.Store) {
	t.Helper()
	n := tableSeq.Add(1)
	cfg := store.Config{ClubTable: fmt.Sprintf("api-club-%d", n), OutboxTable: fmt.Sprintf("api-outbox-%d", n)}
	require.NoError(t, store.CreateTables(context.Background(), dynamo, cfg))
	st, err := store.New(dynamo, cfg)
	require.NoError(t, err)
	svc, err := enrollment.NewService(enrollment.Deps{
		Store: st.Enrollments, Classes: st.Classes, Idempotency: st.Idempotency,
		Policy: profile.PolicyCurrent, Profiles: st.Profiles, SeedProfiles: st.Profiles,
	})
	require.NoError(t, err)
	f := setup(t, func(d *api.Deps) {
		d.Classes, d.Enrollments, d.Projections, d.Profiles = st.Classes, svc, st.Projections, st.Profiles
	})
	return f, st
}

// TestOnDynamoDB runs the enrollment story through the handler on the real
// adapter: the conditional transaction decides seats, duplicates and
// replays, as it will in production.
func TestOnDynamoDB(t *testing.T) {
	t.Parallel()
	f, st := setupDynamoDB(t)
	ctx := context.Background()
	classID := f.createClass(teacher, 2)

	first := f.enroll(student, classID, "key-00000001")
	require.Equal(t, 201, first.status, first.body)
	replay := f.enroll(student, classID, "key-00000001")
	require.Equal(t, 201, replay.status)
	require.Equal(t, first.body, replay.body, "the stored answer, byte for byte")
	require.Equal(t, "true", replay.headers["Idempotent-Replayed"])

	tests := []struct {
		who        caller
		classID    string
		key        string
		wantStatus int
		wantCode   string
	}{
		{student, classID, "key-00000002", 409, "already_enrolled"},
		{student, "no-such-class", "key-00000001", 422, "idempotency_key_reused"},
		{student, "no-such-class", "key-00000003", 404, "class_not_found"},
		{otherStudent, classID, "key-00000001", 201, ""},
		{caller{sub: "s-3", groups: "[student]"}, classID, "key-00000001", 409, "class_full"},
	}
	for _, tt := range tests {
		r := f.enroll(tt.who, tt.classID, tt.key)
		require.Equal(t, tt.wantStatus, r.status, r.body)
		if tt.wantCode != "" {
			require.Equal(t, tt.wantCode, r.errorCode())
		}
	}

	r := f.do("GET", "/classes/"+classID, stranger, "")
	require.Equal(t, float64(2), r.doc["seats_taken"])
	require.Equal(t, float64(0), r.doc["seats_left"])

	eid := first.str("enrollment_id")
	r = f.do("GET", "/enrollments/"+eid, teacher, "")
	require.Equal(t, 200, r.status)
	require.JSONEq(t, first.body, r.body)
	require.Equal(t, 404, f.do("GET", "/enrollments/"+eid, otherStudent, "").status)

	r = f.do("DELETE", "/enrollments/"+eid, student, "")
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, "cancelled", r.str("status"))
	r = f.do("GET", "/classes/"+classID, stranger, "")
	require.Equal(t, float64(1), r.doc["seats_taken"], "the seat was given back")

	p, err := st.Profiles.Get(ctx, "s-1")
	require.NoError(t, err, "the first enrollment created the profile")
	require.Equal(t, "ann@example.com", p.Email)
	r = f.do("PUT", "/me/profile", student, `{"email":"ann@example.org","display_name":"Ann"}`)
	require.Equal(t, 200, r.status)
	p, err = st.Profiles.Get(ctx, "s-1")
	require.NoError(t, err)
	require.Equal(t, "ann@example.org", p.Email)

	r = f.do("GET", "/classes/"+classID+"/roster", teacher, "")
	require.JSONEq(t, fmt.Sprintf(`{"class_id":%q,"students":[],"as_of":null}`, classID), r.body, "no consumer ran")
	r = f.do("GET", "/classes/"+classID+"/stats", teacher, "")
	require.JSONEq(t, fmt.Sprintf(`{"class_id":%q,"enrollments_total":0,"cancellations_total":0}`, classID), r.body)
}
