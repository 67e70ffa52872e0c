//go:build !apifuzz

// The tests of this file need an engine (kumo or moto, through testkit);
// the rest of the package runs over the in-memory stores. The fuzz target is
// built with the tag apifuzz, which leaves this file out, so that its
// instrumented binary holds no engine and no AWS SDK (archtest checks it).

package api_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/api"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/operation"
	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/store"
	"github.com/clubdev/club/localcloud/testkit"
)

// dynamo talks to the engine the tests run on now (testkit: the package runs
// once on kumo and once on moto), shared by the test binary; each test
// creates its own tables.
var dynamo *dynamodb.Client

func TestMain(m *testing.M) {
	os.Exit(testkit.Run(m, func(url string) {
		dynamo = dynamodb.New(dynamodb.Options{
			Region:       "us-east-1",
			BaseEndpoint: aws.String(url),
			Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
			// kumo's X-Amz-Crc32 does not match its body; the data is fine.
			DisableValidateResponseChecksum: true,
		})
	}))
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

// TestPurchasesOnDynamoDB runs the purchase routes through the handler on
// the real adapters, wired as functions/api wires them: the create
// transaction holds the seat, the idempotency record (shared with
// enrollments) answers replays, and the webhook applies the provider's
// news to the stored purchase.
func TestPurchasesOnDynamoDB(t *testing.T) {
	t.Parallel()
	n := tableSeq.Add(1)
	cfg := store.Config{ClubTable: fmt.Sprintf("api-club-%d", n), OutboxTable: fmt.Sprintf("api-outbox-%d", n)}
	ctx := context.Background()
	require.NoError(t, store.CreateTables(ctx, dynamo, cfg))
	st, err := store.New(dynamo, cfg)
	require.NoError(t, err)
	pst, err := store.NewPurchaseAdapters(dynamo, cfg)
	require.NoError(t, err)
	svc, err := purchase.NewService(purchase.Deps{Intensives: pst.Intensives, Store: pst.Purchases, Idempotency: st.Idempotency})
	require.NoError(t, err)
	callbacks := &fakeCallbacks{}
	webhooks, err := purchase.NewWebhooks(purchase.WebhooksDeps{
		Secret: webhookSecret, Store: pst.Purchases, Callbacks: callbacks,
	})
	require.NoError(t, err)
	enrollments, err := enrollment.NewService(enrollment.Deps{
		Store: st.Enrollments, Classes: st.Classes, Idempotency: st.Idempotency, Policy: profile.PolicyCurrent,
	})
	require.NoError(t, err)
	f := setup(t, func(d *api.Deps) {
		d.Classes, d.Enrollments, d.Purchases, d.Webhooks = st.Classes, enrollments, svc, webhooks
	})

	intensiveID := f.createIntensive(teacher, 1, 60)
	first := f.buy(student, intensiveID, "key-00000001")
	require.Equal(t, 202, first.status, first.body)
	pid := first.str("purchase_id")
	require.Equal(t, "/purchases/"+pid, first.headers["Location"])
	replay := f.buy(student, intensiveID, "key-00000001")
	require.Equal(t, 202, replay.status)
	require.Equal(t, first.body, replay.body)
	require.Equal(t, "/purchases/"+pid, replay.headers["Location"])
	require.Equal(t, "true", replay.headers["Idempotent-Replayed"])

	tests := []struct {
		who         caller
		intensiveID string
		key         string
		wantStatus  int
		wantCode    string
	}{
		{otherStudent, intensiveID, "key-00000001", 409, "intensive_full"},
		{student, "i-nope", "key-00000002", 404, "intensive_not_found"},
		{student, intensiveID, "key-00000002", 409, "intensive_full"},
	}
	for _, tt := range tests {
		r := f.buy(tt.who, tt.intensiveID, tt.key)
		require.Equal(t, tt.wantStatus, r.status, r.body)
		require.Equal(t, tt.wantCode, r.errorCode())
	}
	// One idempotency key space per caller: an enrollment cannot reuse it.
	classID := f.createClass(teacher, 3)
	r := f.enroll(student, classID, "key-00000001")
	require.Equal(t, 422, r.status, r.body)
	require.Equal(t, "idempotency_key_reused", r.errorCode())

	r = f.do("GET", "/intensives/"+intensiveID, stranger, "")
	require.EqualValues(t, 1, r.doc["seats_held"])
	require.EqualValues(t, 0, r.doc["seats_left"])

	// The saga requested the payment and waits; the provider's webhook
	// completes the wait, once.
	_, err = pst.Purchases.Update(ctx, pid, waitingForPayment("token-1"))
	require.NoError(t, err)
	ev := map[string]any{"event_id": "evt-1", "type": "payment.succeeded", "payment_id": "pay-1", "reference": pid}
	r = f.webhook(ev)
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, "callback_sent", r.str("outcome"))
	r = f.webhook(ev)
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, "unchanged", r.str("outcome"))
	require.Equal(t, "success", callbacks.outcome("token-1"))

	r = f.do("GET", "/purchases/"+pid, student, "")
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, "payment_pending", r.str("status"), "the saga, not the webhook, confirms")
	require.Equal(t, map[string]any{"payment_id": "pay-1", "status": "succeeded", "checkout_url": "https://pay.example/checkout/pay-1"}, r.doc["payment"])
	require.Equal(t, 404, f.do("GET", "/purchases/"+pid, otherStudent, "").status)
}

// TestExportsOnDynamoDB runs the export route on the real adapter, wired as
// functions/api wires it: one TransactWriteItems writes the operation and
// its job's outbox row.
func TestExportsOnDynamoDB(t *testing.T) {
	t.Parallel()
	n := tableSeq.Add(1)
	cfg := store.Config{ClubTable: fmt.Sprintf("api-club-%d", n), OutboxTable: fmt.Sprintf("api-outbox-%d", n)}
	require.NoError(t, store.CreateTables(context.Background(), dynamo, cfg))
	st, err := store.New(dynamo, cfg)
	require.NoError(t, err)
	svc, err := operation.NewService(operation.Deps{Store: st.Operations})
	require.NoError(t, err)
	f := setup(t, func(d *api.Deps) {
		d.Classes, d.Projections, d.Operations = st.Classes, st.Projections, svc
	})
	classID := f.createClass(teacher, 3)
	r := f.export(teacher, classID)
	require.Equal(t, 202, r.status, r.body)
	id := r.str("operation_id")

	r = f.do("GET", "/operations/"+id, teacher, "")
	require.Equal(t, 200, r.status, r.body)
	require.Equal(t, "pending", r.str("status"))
	rows, err := st.Outbox.Unpublished(context.Background(), time.Now().Add(time.Hour), 100)
	require.NoError(t, err)
	var jobs []string
	for _, row := range rows {
		if row.Type == events.TypeExportRequested {
			jobs = append(jobs, row.AggregateID)
		}
	}
	require.Equal(t, []string{id}, jobs)
	require.Equal(t, 404, f.do("GET", "/operations/"+id, otherTeacher, "").status)
}
