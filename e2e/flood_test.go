package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/ops/queues"
	"github.com/clubdev/club/localcloud/template"
)

// Work classes (docs/principles.md §1.7, docs/architecture.md): bulk work has its own
// queue and a bounded concurrency, so a flood of exports never delays the
// urgent class's mail beyond its maximum age, and the flood itself drains.

const (
	floodExports     = 300
	floodClasses     = 5
	floodEnrollments = 30
	// floodTopUp is how many more exports are asked for whenever the bulk
	// queue's backlog falls below as many while the mail is on its way.
	floodTopUp = 150
	// floodWorkers is how many requests the test sends at once.
	floodWorkers = 12
)

// inParallel runs do(0..n-1) on floodWorkers goroutines and returns the
// first error.
func inParallel(n int, do func(i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	next := make(chan int)
	for range floodWorkers {
		wg.Go(func() {
			for i := range next {
				if err := do(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// post sends a request from a worker goroutine (no t.FailNow there) and
// decodes the JSON answer.
func post(u user, path string, want int, headers ...string) (map[string]any, error) {
	req, err := http.NewRequest(http.MethodPost, stack.file.APIURL+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+u.token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("POST %s: %d: %s", path, resp.StatusCode, raw)
	}
	var body map[string]any
	return body, json.Unmarshal(raw, &body)
}

// exportsBacklog is how many export jobs wait in the bulk queue.
func exportsBacklog(t *testing.T) int {
	t.Helper()
	out, err := stack.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(stack.file.Queues["ExportsQueue"]),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages},
	})
	require.NoError(t, err)
	var n int
	_, err = fmt.Sscan(out.Attributes["ApproximateNumberOfMessages"], &n)
	require.NoError(t, err)
	return n
}

// exportsOf lists the teachers' roster exports through GET /operations:
// each one's status and when it last changed.
func exportsOf(t *testing.T, teachers []user) (statuses map[string]int, finishedAt []time.Time) {
	t.Helper()
	statuses = map[string]int{}
	for _, u := range teachers {
		path := "/operations?kind=roster_export&limit=100"
		for {
			r := call(t, u, http.MethodGet, path, nil)
			require.Equal(t, http.StatusOK, r.status, string(r.raw))
			for _, item := range r.body["operations"].([]any) {
				op := item.(map[string]any)
				status := op["status"].(string)
				statuses[status]++
				if status == "succeeded" || status == "failed" {
					at, err := time.Parse(time.RFC3339Nano, op["updated_at"].(string))
					require.NoError(t, err)
					finishedAt = append(finishedAt, at)
				}
			}
			next := r.str("next_cursor")
			if next == "" {
				break
			}
			path = "/operations?kind=roster_export&limit=100&cursor=" + url.QueryEscape(next)
		}
	}
	return statuses, finishedAt
}

// Must-show 2: a flood of 300 export jobs, kept up while the mail is on its
// way, does not delay enrollment mail beyond the urgent class's maximum age,
// and the exports all finish.
// Enrollments are made while the flood waits in the bulk queue; each one's
// mail delay is measured from the enrollment's created_at to its
// notification's sent_at (the stack's own clock) and must stay below the
// urgent class's limit (UrgentMaxAgeSeconds, as the stack has it). Not
// parallel: the flood is the load it measures against.
func TestFloodOfExportsDoesNotDelayUrgentMail(t *testing.T) {
	catalog, err := queues.NewCatalog(stack.file)
	require.NoError(t, err)
	notifications, err := catalog.Find("NotificationsQueue")
	require.NoError(t, err)
	require.NotNil(t, notifications.Class, "the notifications queue has a work class")
	require.Equal(t, "urgent", notifications.Class.Name)
	urgentMaxAge := notifications.Class.MaxAge
	exportsQueue, err := catalog.Find("ExportsQueue")
	require.NoError(t, err)
	require.Equal(t, "bulk", exportsQueue.Class.Name)

	// Classes with students, one teacher each.
	var classIDs []string
	var teachers []user
	for range floodClasses {
		classID, teacher := newClass(t, floodEnrollments+10)
		classIDs, teachers = append(classIDs, classID), append(teachers, teacher)
		for range 3 {
			r := enroll(t, newUser(t, "student"), classID, id("key"))
			require.Equal(t, http.StatusCreated, r.status, string(r.raw))
		}
	}

	// The flood: every teacher exports its class's roster, many times.
	asked := 0
	askFor := func(n int) {
		require.NoError(t, inParallel(n, func(i int) error {
			_, err := post(teachers[i%floodClasses], "/classes/"+classIDs[i%floodClasses]+"/exports", http.StatusAccepted)
			return err
		}))
		asked += n
	}
	floodStart := time.Now()
	askFor(floodExports)
	t.Logf("%d exports accepted in %s", floodExports, time.Since(floodStart).Round(time.Millisecond))
	eventually(t, 10*time.Second, "the exports wait in the bulk queue", func() bool { return exportsBacklog(t) > 0 })
	backlog := exportsBacklog(t)

	// Urgent work while the flood is queued.
	students := make([]user, floodEnrollments)
	for i := range students {
		students[i] = newUser(t, "student")
	}
	enrollments := make([]string, floodEnrollments)
	created := make([]time.Time, floodEnrollments)
	require.NoError(t, inParallel(floodEnrollments, func(i int) error {
		body, err := post(students[i], "/classes/"+classIDs[i%floodClasses]+"/enrollments", http.StatusCreated, "Idempotency-Key", id("flood-key"))
		if err != nil {
			return err
		}
		enrollments[i], _ = body["enrollment_id"].(string)
		created[i], err = time.Parse(time.RFC3339Nano, fmt.Sprint(body["created_at"]))
		return err
	}))

	// The flood is kept up while the mail is on its way: whenever the bulk
	// queue holds fewer than floodTopUp, as many more are asked for. An
	// idle machine drained the first 300 in about a second and a half, before
	// the mail of enrollments made after them had gone out, and then
	// overtaking could not be told from first in, first out.
	sentAt := make([]time.Time, floodEnrollments)
	eventually(t, urgentMaxAge+30*time.Second, "every enrollment's mail is sent", func() bool {
		if exportsBacklog(t) < floodTopUp {
			askFor(floodTopUp)
		}
		for i, e := range enrollments {
			if !sentAt[i].IsZero() {
				continue
			}
			r := call(t, students[i], http.MethodGet, "/enrollments/"+e, nil)
			require.Equal(t, http.StatusOK, r.status, string(r.raw))
			n, _ := r.body["notification"].(map[string]any)
			if n["status"] != "sent" {
				return false
			}
			at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(n["sent_at"]))
			require.NoError(t, err)
			sentAt[i] = at
		}
		return true
	})
	// Exports still waiting now finish after every mail went out.
	backlogAfterMail := exportsBacklog(t)
	var worst time.Duration
	lastSent := sentAt[0]
	for i := range enrollments {
		delay := sentAt[i].Sub(created[i])
		require.Less(t, delay, urgentMaxAge, "enrollment %s: mail %s after the enrollment, the urgent class allows %s", enrollments[i], delay, urgentMaxAge)
		worst = max(worst, delay)
		if sentAt[i].After(lastSent) {
			lastSent = sentAt[i]
		}
	}

	// No starvation: the flood drains, every export succeeds.
	var statuses map[string]int
	var finishedAt []time.Time
	eventually(t, 2*time.Minute, fmt.Sprintf("every export of %d finished", asked), func() bool {
		statuses, finishedAt = exportsOf(t, teachers)
		return statuses["succeeded"]+statuses["failed"] == asked
	})
	require.Equal(t, map[string]int{"succeeded": asked}, statuses)

	// The mail overtook the flood: exports queued before the enrollments
	// were still finishing after the last mail had gone out (in one queue,
	// first in first out, it would have waited for all of them).
	after := 0
	for _, at := range finishedAt {
		if at.After(lastSent) {
			after++
		}
	}
	require.Positive(t, backlogAfterMail, "exports waited in the bulk queue when every mail had gone out")
	require.Positive(t, after, "exports finished after the last mail")
	t.Logf("backlog of %d export jobs when the enrollments began and %d when the last mail had gone out; worst mail delay %s (limit %s); "+
		"%d of %d exports finished after the last mail; all done %s after the first was asked for",
		backlog, backlogAfterMail, worst.Round(time.Millisecond), urgentMaxAge, after, asked, time.Since(floodStart).Round(time.Millisecond))

	// The bulk class never ran more exports at once than its
	// MaximumConcurrency (on the local cloud, which counts them).
	if stats, ok := localStats(t); ok {
		st, err := template.Load(filepath.Join(moduleRoot(), "infra", "template.yaml"), template.Options{})
		require.NoError(t, err)
		fn, ok := st.Function("ExporterFunction")
		require.True(t, ok)
		require.Len(t, fn.SQSEvents, 1)
		limit := fn.SQSEvents[0].MaximumConcurrency
		key := "ExporterFunction." + fn.SQSEvents[0].Name
		mapping, ok := stats.SQSMappings[key]
		require.True(t, ok, "stats of the mapping %s", key)
		require.Positive(t, limit)
		require.LessOrEqual(t, mapping.MaxInFlight, limit, "exports at once")
		require.Positive(t, mapping.MaxInFlight)
		t.Logf("exports at once: at most %d (MaximumConcurrency %d)", mapping.MaxInFlight, limit)
	}
}

// localStats reads the local cloud's GET /_club/stats; ok is false on a
// stack that has none (LocalStack, AWS).
func localStats(t *testing.T) (stats struct {
	SQSMappings map[string]struct{ MaxInFlight int } `json:"sqs_mappings"`
	// Adversary counts what the local cloud's adversary did, by behaviour
	// (docs/local-cloud.md).
	Adversary struct {
		Counts map[string]int64 `json:"counts"`
	} `json:"adversary"`
}, ok bool) {
	t.Helper()
	resp, err := http.Get(stack.file.Endpoint + "/_club/stats")
	if err != nil {
		return stats, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return stats, false
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&stats))
	return stats, true
}
