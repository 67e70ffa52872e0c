package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud"
)

// TestQuickstartUnderTheAdversaryFiresEveryBehaviour is issue 35's first
// must-show, with the binary a developer runs: club-local --adversary aws
// starts; after the README's quickstart and 100 enrollments, /_club/stats
// counts every behaviour of the profile above 0, and the quickstart's
// business facts hold, whatever seed it draws. The run gives some behaviours
// few decisions: sfn.task_rerun one per Lambda task of the quickstart's one
// purchase (four), lambda.async_repeat one per fire of a schedule, ddb.gsi_lag
// and lambda.esm_redeliver a few dozen; at the aws profile's rates alone a
// drawn seed would fire all thirteen only about one time in sixteen. The
// adversary's first decision of each behaviour fires (adversary.Decide), so
// every seed shows them all; club-local logs the seed, and a failure names it.
// The rates are the profile's. The schedules run at
// 300× (the outbox sweeper every 0.2 s instead of every minute): the test
// does in seconds what a person following the quickstart does in many
// minutes, and a schedule's fires are lambda.async_repeat's only decisions.
func TestQuickstartUnderTheAdversaryFiresEveryBehaviour(t *testing.T) {
	r := start(t, t.TempDir(), freeAddrs(t), "--adversary", "aws", "--schedule-speed", "300")
	seed := cloudStats(r).Adversary.Seed
	t.Logf("adversary aws, seed %s: replay with --adversary-seed %s", seed, seed)
	teacher, student := r.user("teacher"), r.user("student")

	// The quickstart (README.md), step by step. The teacher opens a class;
	// the student takes a seat.
	class := r.api(teacher, http.MethodPost, "/classes", map[string]any{
		"title": "Queues", "capacity": 20, "starts_at": "2030-01-01T17:00:00Z"})
	require.Equal(t, http.StatusCreated, class.status, string(class.raw))
	classID := class.str("class_id")
	enrolled := r.api(student, http.MethodPost, "/classes/"+classID+"/enrollments", nil, "Idempotency-Key", "enroll-"+classID)
	require.Equal(t, http.StatusCreated, enrolled.status, string(enrolled.raw))

	// The mail, the roster and the counters follow.
	eventually(t, 2*time.Minute, "the enrollment mailed, on the roster and counted", func() bool {
		return len(r.mailTo(student.email)) == 1 && rosterSize(r, teacher, classID) == 1 && enrollmentsTotal(r, teacher, classID) == 1
	})

	// An export of the roster: an operation that succeeds with its row.
	exported := r.api(teacher, http.MethodPost, "/classes/"+classID+"/exports", nil)
	require.Equal(t, http.StatusAccepted, exported.status, string(exported.raw))
	var op reply
	eventually(t, 2*time.Minute, "the export succeeded", func() bool {
		op = r.api(teacher, http.MethodGet, "/operations/"+exported.str("operation_id"), nil)
		require.NotEqual(t, "failed", op.str("status"), string(op.raw))
		return op.str("status") == "succeeded"
	})
	result, _ := op.body["result"].(map[string]any)
	require.EqualValues(t, 1, result["rows"], string(op.raw))

	// A paid intensive bought through the saga, paid at the sandbox.
	intensive := r.api(teacher, http.MethodPost, "/intensives", map[string]any{
		"title": "Sagas in practice", "capacity": 10,
		"price": map[string]any{"amount_cents": 4900, "currency": "EUR"}, "hold_seconds": 600})
	require.Equal(t, http.StatusCreated, intensive.status, string(intensive.raw))
	intensiveID := intensive.str("intensive_id")
	bought := r.api(student, http.MethodPost, "/intensives/"+intensiveID+"/purchases", nil, "Idempotency-Key", "buy-"+intensiveID)
	require.Equal(t, http.StatusAccepted, bought.status, string(bought.raw))
	purchaseID := bought.str("purchase_id")
	var paymentID string
	eventually(t, 2*time.Minute, "the purchase has its payment", func() bool {
		p := r.api(student, http.MethodGet, "/purchases/"+purchaseID, nil)
		pay, _ := p.body["payment"].(map[string]any)
		paymentID, _ = pay["payment_id"].(string)
		return paymentID != ""
	})
	r.sandbox(r.stack.PaymentURL, http.MethodPost, "/_sandbox/payments/"+paymentID+"/succeed", nil)
	eventually(t, 2*time.Minute, "the purchase confirmed", func() bool {
		p := r.api(student, http.MethodGet, "/purchases/"+purchaseID, nil)
		require.NotContains(t, []string{"expired", "refunded", "needs_reconciliation"}, p.str("status"), string(p.raw))
		return p.str("status") == "confirmed"
	})
	seats := r.api(student, http.MethodGet, "/intensives/"+intensiveID, nil)
	require.EqualValues(t, 1, seats.body["seats_taken"], string(seats.raw))

	// 100 enrollments, the teacher following the roster and the counters
	// after each, as the quickstart's teacher does after the first.
	const n = 100
	full := r.api(teacher, http.MethodPost, "/classes", map[string]any{
		"title": "Streams", "capacity": n, "starts_at": "2030-01-01T17:00:00Z"})
	require.Equal(t, http.StatusCreated, full.status, string(full.raw))
	fullID := full.str("class_id")
	students := make([]user, n)
	for i := range students {
		students[i] = r.user("student")
		e := r.api(students[i], http.MethodPost, "/classes/"+fullID+"/enrollments", nil, "Idempotency-Key", fmt.Sprintf("enroll-streams-%d", i))
		require.Equal(t, http.StatusCreated, e.status, "enrollment %d: %s", i, e.raw)
		rosterSize(r, teacher, fullID)
		enrollmentsTotal(r, teacher, fullID)
	}
	eventually(t, 2*time.Minute, "every enrollment mailed, on the roster and counted", func() bool {
		for _, s := range students {
			if len(r.mailTo(s.email)) == 0 {
				return false
			}
		}
		return rosterSize(r, teacher, fullID) == n && enrollmentsTotal(r, teacher, fullID) == n
	})
	for _, s := range students {
		require.Len(t, r.mailTo(s.email), 1, "one mail for %s", s.email)
	}

	stats := cloudStats(r)
	st, retries := stats.Adversary, stats.Endpoint.Retries
	t.Logf("adversary %s, seed %s: %v (idempotent retries %d); SDK retries carried out again %d, replayed %d",
		st.Spec, st.Seed, st.Counts, st.IdempotentRetries, retries.CarriedOut, retries.Replayed)
	require.Zero(t, retries.Replayed, "with the adversary on, a retried call is carried out again: %v", retries.Calls)
	require.NotEqual(t, "0", st.Seed, "a seed is drawn")
	require.Equal(t, seed, st.Seed)
	require.NotEmpty(t, st.Rates, "the aws profile sets every behaviour's rate")
	require.Len(t, st.Counts, len(st.Rates), "a count for every behaviour")
	for b := range st.Rates {
		require.Positive(t, st.Counts[b], "%s never fired (seed %s): %v", b, st.Seed, st.Counts)
	}
}

func rosterSize(r *running, teacher user, classID string) int {
	ro := r.api(teacher, http.MethodGet, "/classes/"+classID+"/roster", nil)
	require.Equal(r.t, http.StatusOK, ro.status, string(ro.raw))
	list, _ := ro.body["students"].([]any)
	return len(list)
}

func enrollmentsTotal(r *running, teacher user, classID string) int {
	st := r.api(teacher, http.MethodGet, "/classes/"+classID+"/stats", nil)
	require.Equal(r.t, http.StatusOK, st.status, string(st.raw))
	n, _ := st.body["enrollments_total"].(float64)
	return int(n)
}

// cloudStats reads /_club/stats.
func cloudStats(r *running) localcloud.Stats {
	out := send(r.t, http.MethodGet, r.stack.Endpoint+"/_club/stats", "", nil)
	require.Equal(r.t, http.StatusOK, out.status, string(out.raw))
	var doc localcloud.Stats
	require.NoError(r.t, json.Unmarshal(out.raw, &doc), string(out.raw))
	return doc
}
