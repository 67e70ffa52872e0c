package projectionhandler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/projection"
	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/sqsconsumer/projectionhandler"
	"github.com/clubdev/club/internal/sqsconsumer/sqsconsumertest"
	"github.com/clubdev/club/internal/store/memstore"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

const classID = "class-1"

// readModel is one function's projection: how main builds its projector,
// how to read the class's read model, and what it holds after each scenario.
type readModel struct {
	function     string
	newProjector func(projection.Inbox) *projection.Projector
	read         func(t *testing.T, st *memstore.Store) any
	// afterDisorder: ada, grace and linus enrolled, linus cancelled.
	afterDisorder any
	// afterConflict: ada and grace enrolled, nothing else.
	afterConflict any
	// empty: nothing applied yet; afterAda: ada enrolled.
	empty, afterAda any
}

// readModels are the functions sharing this handler: every test runs for
// each of them.
var readModels = []readModel{
	{
		function:     "roster",
		newProjector: projection.NewRosterProjector,
		read: func(t *testing.T, st *memstore.Store) any {
			t.Helper()
			r, err := st.Projections.Roster(context.Background(), classID)
			require.NoError(t, err)
			var ids []string
			for _, s := range r.Students {
				ids = append(ids, s.StudentID)
			}
			return ids
		},
		afterDisorder: []string{"ada", "grace"}, // ordered by enrollment time
		afterConflict: []string{"ada", "grace"},
		empty:         []string(nil),
		afterAda:      []string{"ada"},
	},
	{
		function:     "analytics",
		newProjector: projection.NewStatsProjector,
		read: func(t *testing.T, st *memstore.Store) any {
			t.Helper()
			s, err := st.Projections.Stats(context.Background(), classID)
			require.NoError(t, err)
			return [2]int64{s.EnrollmentsTotal, s.CancellationsTotal}
		},
		afterDisorder: [2]int64{3, 1}, // each enrollment and cancellation counted once
		afterConflict: [2]int64{2, 0},
		empty:         [2]int64{0, 0},
		afterAda:      [2]int64{1, 0},
	},
}

// forEachReadModel runs test as a parallel subtest per read model.
func forEachReadModel(t *testing.T, test func(t *testing.T, f *fixture)) {
	t.Helper()
	for _, rm := range readModels {
		t.Run(rm.function, func(t *testing.T) {
			t.Parallel()
			test(t, setup(t, rm))
		})
	}
}

// fixture is a projection function's handler wired as in main over the
// in-memory store; inbox failures can be injected.
type fixture struct {
	rm      readModel
	store   *memstore.Store
	sqs     *sqsconsumertest.SQS
	handler *projectionhandler.Handler
	// failNext makes that many upcoming inbox calls fail transiently.
	failNext atomic.Int32
	seq      atomic.Int64
}

func setup(t *testing.T, rm readModel) *fixture {
	t.Helper()
	f := &fixture{rm: rm, store: memstore.New(), sqs: &sqsconsumertest.SQS{}}
	queue := sqsconsumer.Config{Name: rm.function, QueueURL: rm.function + "-queue", DLQURL: rm.function + "-dlq", Metrics: io.Discard}
	h, err := projectionhandler.New(queue, f.sqs, rm.newProjector(flakyInbox{f}), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	f.handler = h
	return f
}

// flakyInbox fails while failNext is positive, then delegates to memstore.
type flakyInbox struct{ f *fixture }

func (i flakyInbox) ApplyOnce(ctx context.Context, consumer string, env events.Envelope, effects []projection.Effect) error {
	if i.f.failNext.Add(-1) >= 0 {
		return errors.New("throughput exceeded")
	}
	return i.f.store.Inbox.ApplyOnce(ctx, consumer, env, effects)
}

func (i flakyInbox) ApplyAllOnce(ctx context.Context, consumer string, batch []projection.Application) error {
	if i.f.failNext.Add(-1) >= 0 {
		return errors.New("throughput exceeded")
	}
	return i.f.store.Inbox.ApplyAllOnce(ctx, consumer, batch)
}

func body(t *testing.T, env events.Envelope) string {
	t.Helper()
	b, err := json.Marshal(env)
	require.NoError(t, err)
	return string(b)
}

func created(t *testing.T, enrollmentID, studentID string, at time.Time) string {
	t.Helper()
	env, err := events.New(events.NewID(), at, events.EnrollmentCreated{EnrollmentID: enrollmentID, ClassID: classID, StudentID: studentID})
	require.NoError(t, err)
	return body(t, env)
}

func cancelled(t *testing.T, enrollmentID, studentID string, at time.Time) string {
	t.Helper()
	env, err := events.New(events.NewID(), at, events.EnrollmentCancelled{EnrollmentID: enrollmentID, ClassID: classID, StudentID: studentID})
	require.NoError(t, err)
	return body(t, env)
}

func (f *fixture) delivery(body string) lambdaevents.SQSMessage {
	return sqsconsumertest.Record(fmt.Sprintf("msg-%d", f.seq.Add(1)), body, 1, t0, nil)
}

func (f *fixture) deliver(t *testing.T, bodies ...string) []string {
	t.Helper()
	var records []lambdaevents.SQSMessage
	for _, b := range bodies {
		records = append(records, f.delivery(b))
	}
	resp, err := f.handler.Handle(context.Background(), sqsconsumertest.Event(records...))
	require.NoError(t, err)
	return sqsconsumertest.FailedIDs(resp)
}

func (f *fixture) readModel(t *testing.T) any {
	t.Helper()
	return f.rm.read(t, f.store)
}

// TestDuplicatesAndDisorderChangeNothing: every event delivered twice, the
// cancellation before the enrollment it cancels, and the whole batch again:
// the read model is exact.
func TestDuplicatesAndDisorderChangeNothing(t *testing.T) {
	t.Parallel()
	forEachReadModel(t, func(t *testing.T, f *fixture) {
		ada := created(t, "e-ada", "ada", t0)
		grace := created(t, "e-grace", "grace", t0.Add(time.Minute))
		linus := created(t, "e-linus", "linus", t0.Add(2*time.Minute))
		linusLeaves := cancelled(t, "e-linus", "linus", t0.Add(time.Hour))

		batch := []string{linusLeaves, grace, ada, linus, ada, linusLeaves, grace, linus}
		require.Empty(t, f.deliver(t, batch...))
		require.Empty(t, f.deliver(t, batch...))
		require.Equal(t, f.rm.afterDisorder, f.readModel(t))
		require.Empty(t, f.sqs.DeadLetters())
	})
}

// TestContractConflictAndBadEventsAreDeadLettered: an event id reused with
// other content, an unknown version and a malformed body reach the DLQ with
// their reasons; the rest of the batch is applied.
func TestContractConflictAndBadEventsAreDeadLettered(t *testing.T) {
	t.Parallel()
	forEachReadModel(t, func(t *testing.T, f *fixture) {
		ada := created(t, "e-ada", "ada", t0)
		require.Empty(t, f.deliver(t, ada))

		var env map[string]any
		require.NoError(t, json.Unmarshal([]byte(ada), &env))
		env["data"].(map[string]any)["student_id"] = "mallory" // same event id, other content
		conflict, err := json.Marshal(env)
		require.NoError(t, err)
		grace := created(t, "e-grace", "grace", t0.Add(time.Minute))
		v9 := strings.Replace(created(t, "e-x", "x", t0), `"schema_version":2`, `"schema_version":9`, 1)

		require.Empty(t, f.deliver(t, string(conflict), v9, "not json", grace))
		require.Equal(t, f.rm.afterConflict, f.readModel(t), "ada once, grace once; the conflict changed nothing")

		codes := map[string]string{}
		for _, dl := range f.sqs.DeadLetters() {
			codes[dl.Attributes["dlq_code"]] = dl.Attributes["dlq_reason"]
			require.Equal(t, f.rm.function+"-dlq", dl.QueueURL)
		}
		require.Len(t, codes, 3)
		require.Contains(t, codes["contract_conflict"], "different content")
		require.Contains(t, codes["unsupported_version"], "version 9")
		require.Contains(t, codes, "malformed_event")
	})
}

// TestTransientFailureIsRetriedThenApplied: a failing inbox write reports
// the message for retry with a delay, and the retry applies it once.
func TestTransientFailureIsRetriedThenApplied(t *testing.T) {
	t.Parallel()
	forEachReadModel(t, func(t *testing.T, f *fixture) {
		ada := created(t, "e-ada", "ada", t0)
		f.failNext.Store(1)
		d := f.delivery(ada)
		resp, err := f.handler.Handle(context.Background(), sqsconsumertest.Event(d))
		require.NoError(t, err)
		require.Equal(t, []string{d.MessageId}, sqsconsumertest.FailedIDs(resp))
		_, delayed := f.sqs.Visibility(d.MessageId)
		require.True(t, delayed, "the retry is delayed by the backoff")
		require.Equal(t, f.rm.empty, f.readModel(t))

		require.Empty(t, f.deliver(t, ada))
		require.Equal(t, f.rm.afterAda, f.readModel(t))
		require.Empty(t, f.sqs.DeadLetters())
	})
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{"CLUB_TABLE": "club", "OUTBOX_TABLE": "outbox", "INBOX_RETENTION": "3d", "QUEUE_URL": "q", "DLQ_URL": "d"}
	cfg, err := projectionhandler.LoadConfig("roster", func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, 72*time.Hour, cfg.Store().InboxRetention)
	require.Equal(t, "q", cfg.Queue.QueueURL)
	require.Equal(t, "roster", cfg.Queue.Name, "the function names the consumer in logs and metrics")

	_, err = projectionhandler.LoadConfig("analytics", func(string) string { return "" })
	require.ErrorContains(t, err, "analytics: ")
	for _, want := range []string{"CLUB_TABLE", "OUTBOX_TABLE", "QUEUE_URL", "DLQ_URL"} {
		require.ErrorContains(t, err, want)
	}
}
