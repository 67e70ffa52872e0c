package api_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/webhooksig"
)

// TestAuthorizationMatrix sends every route as every kind of caller, each
// cell on fresh data: a class of teacher with one enrollment of student and
// one export asked for by teacher, and an intensive of teacher with one
// purchase of student. A wrong role is 403;
// a resource the caller may not see is 404. The payment webhook is the
// provider's: a user's token neither helps nor hurts, the signature decides.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	callers := []struct {
		name string
		who  caller
	}{
		{"teacher", teacher}, {"other teacher", otherTeacher}, {"student", student}, {"other student", otherStudent},
		{"operator", operator}, {"stranger", stranger}, {"anonymous", anonymous},
	}
	type cell = int // the expected status, per caller in the order above
	routes := []struct {
		method, path, body string
		want               []cell
	}{
		{"GET", "/healthz", "", []cell{200, 200, 200, 200, 200, 200, 200}},
		{"POST", "/classes", `{"title":"Go","capacity":3,"starts_at":"2026-04-01T17:00:00Z"}`, []cell{201, 201, 403, 403, 403, 403, 401}},
		{"GET", "/classes/{class}", "", []cell{200, 200, 200, 200, 200, 200, 401}},
		// student already holds a seat in the class
		{"POST", "/classes/{class}/enrollments", "", []cell{403, 403, 409, 201, 403, 403, 401}},
		{"GET", "/classes/{class}/roster", "", []cell{200, 404, 403, 403, 403, 403, 401}},
		{"GET", "/classes/{class}/stats", "", []cell{200, 404, 403, 403, 403, 403, 401}},
		{"GET", "/enrollments/{enrollment}", "", []cell{200, 404, 200, 404, 404, 404, 401}},
		{"DELETE", "/enrollments/{enrollment}", "", []cell{403, 403, 200, 404, 403, 403, 401}},
		{"PUT", "/me/profile", `{"email":"me@example.com","display_name":"Me"}`, []cell{200, 200, 200, 200, 200, 200, 401}},
		{"POST", "/intensives", `{"title":"Go","capacity":3,"price":{"amount_cents":100,"currency":"EUR"}}`, []cell{201, 201, 403, 403, 403, 403, 401}},
		{"GET", "/intensives/{intensive}", "", []cell{200, 200, 200, 200, 200, 200, 401}},
		// a second purchase (another key) is a new one; seats are left
		{"POST", "/intensives/{intensive}/purchases", "", []cell{403, 403, 202, 202, 403, 403, 401}},
		{"GET", "/purchases/{purchase}", "", []cell{404, 404, 200, 404, 404, 404, 401}},
		// only the class's teacher exports its roster; only the one who asked sees the operation
		{"POST", "/classes/{class}/exports", "", []cell{202, 404, 403, 403, 403, 403, 401}},
		{"GET", "/operations/{operation}", "", []cell{200, 404, 404, 404, 404, 404, 401}},
		// everyone signed in lists their own operations (others' never show)
		{"GET", "/operations", "", []cell{200, 200, 200, 200, 200, 200, 401}},
		{"POST", "/webhooks/payments", signedEvent, []cell{200, 200, 200, 200, 200, 200, 200}},
		{"POST", "/webhooks/payments", "", []cell{401, 401, 401, 401, 401, 401, 401}},
	}
	for _, rt := range routes {
		for i, c := range callers {
			t.Run(rt.method+" "+rt.path+" as "+c.name, func(t *testing.T) {
				t.Parallel()
				f := setup(t)
				classID := f.createClass(teacher, 3)
				created := f.enroll(student, classID, "key-00000001")
				require.Equal(t, 201, created.status)
				intensiveID := f.createIntensive(teacher, 3, 60)
				bought := f.buy(student, intensiveID, "key-00000001")
				require.Equal(t, 202, bought.status)
				exported := f.export(teacher, classID)
				require.Equal(t, 202, exported.status)
				ids := strings.NewReplacer("{class}", classID, "{enrollment}", created.str("enrollment_id"),
					"{intensive}", intensiveID, "{purchase}", bought.str("purchase_id"), "{operation}", exported.str("operation_id"))
				path, body := ids.Replace(rt.path), ids.Replace(rt.body)
				headers := []string{"Idempotency-Key", "key-00000002"}
				if rt.path == "/webhooks/payments" && body != "" {
					headers = append(headers, webhooksig.Header, webhooksig.Sign(webhookSecret, time.Now(), []byte(body)))
				}

				r := f.do(rt.method, path, c.who, body, headers...)
				require.Equal(t, rt.want[i], r.status, r.body)
				if r.status >= 400 {
					want := map[int]string{401: "unauthorized", 403: "forbidden", 404: "not_found", 409: "already_enrolled"}[r.status]
					switch rt.path {
					case "/webhooks/payments":
						want = "invalid_signature"
					case "/operations/{operation}":
						if r.status == 404 {
							want = "operation_not_found"
						}
					}
					require.Equal(t, want, r.errorCode())
				}
			})
		}
	}
}

// signedEvent is a provider event about the matrix's purchase; the matrix
// signs it.
const signedEvent = `{"event_id":"evt-1","type":"payment.failed","payment_id":"pay-1","reference":"{purchase}"}`

// TestLastSeatRace: many students race for a few seats through the handler;
// exactly capacity of them win, the rest are told the class is full.
func TestLastSeatRace(t *testing.T) {
	t.Parallel()
	const students, seats = 50, 5
	f := setup(t)
	classID := f.createClass(teacher, seats)

	statuses := make([]int, students)
	codes := make([]string, students)
	var wg sync.WaitGroup
	for i := range students {
		wg.Go(func() {
			who := caller{sub: fmt.Sprintf("racer-%02d", i), groups: "[student]"}
			ev := event("POST", "/classes/"+classID+"/enrollments", who, "", map[string]string{"Idempotency-Key": "race-key-0001"})
			resp, err := f.h.Handle(f.ctx, ev)
			if err == nil {
				statuses[i] = resp.StatusCode
				codes[i] = resp.Body
			}
		})
	}
	wg.Wait()
	count := map[int]int{}
	for i, s := range statuses {
		count[s]++
		if s == 409 {
			require.Contains(t, codes[i], `"code":"class_full"`)
		}
	}
	require.Equal(t, map[int]int{201: seats, 409: students - seats}, count)
	require.Equal(t, seats, f.seatsTaken(classID))
	require.Equal(t, seats, f.outboxCount(), "one event per seat")
}

// TestLogs: one JSON line per request with the ids it concerned, and never
// an e-mail address, even when the request carried some.
func TestLogs(t *testing.T) {
	t.Parallel()
	f := setup(t)
	classID := f.createClass(teacher, 3)
	eid := f.enroll(student, classID, "key-00000001").str("enrollment_id")
	f.do("PUT", "/me/profile", student, `{"email":"ann.secret@example.com","display_name":"Ann"}`)
	f.do("PUT", "/me/profile", student, `{"email":"not-an-address-but-private@","display_name":"Ann"}`)
	f.do("GET", "/enrollments/"+eid, teacher, "")

	logs := f.logs.String()
	require.NotContains(t, logs, "@", "no e-mail address, from a token or a body")
	require.NotContains(t, logs, "private")
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	require.Len(t, lines, 5, "one line per request")
	require.Contains(t, lines[0], `"class_id":"`+classID+`"`)
	require.Contains(t, lines[0], `"status":201`)
	require.Contains(t, lines[1], `"enrollment_id":"`+eid+`"`, "the new enrollment's id")
	require.Contains(t, lines[1], `"user_id":"s-1"`)
	require.Contains(t, lines[3], `"error_code":"validation_failed"`)
	require.Contains(t, lines[4], `"enrollment_id":"`+eid+`"`)
	for _, l := range lines {
		require.Contains(t, l, `"request_id":"req-`)
		require.Contains(t, l, `"function":"api"`)
	}
}
