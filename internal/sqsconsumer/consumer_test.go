package sqsconsumer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/inbox"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/sqsconsumer/sqsconsumertest"
)

// envelope returns an enrollment.created envelope at the given schema
// version, so that version 9 is well formed but unsupported.
func envelope(eventID string, version int) string {
	return fmt.Sprintf(`{"event_id":%q,"type":"enrollment.created","schema_version":%d,"aggregate_id":"e-1",`+
		`"occurred_at":"2026-03-01T10:00:00Z","data":{"enrollment_id":"e-1","class_id":"c-1","student_id":"s-1"}}`, eventID, version)
}

// setup is a consumer on fresh queues with its log and metrics captured.
type fixture struct {
	queues
	consumer *sqsconsumer.Consumer
	logs     *bytes.Buffer
	metrics  *bytes.Buffer
}

func setup(t *testing.T, cfg sqsconsumer.Config, visibility time.Duration, maxReceiveCount int) *fixture {
	t.Helper()
	f := &fixture{queues: newQueues(t, visibility, maxReceiveCount), logs: &bytes.Buffer{}, metrics: &bytes.Buffer{}}
	cfg.Name = "test-consumer"
	cfg.QueueURL, cfg.DLQURL = f.url, f.dlqURL
	cfg.Metrics = f.metrics
	c, err := sqsconsumer.New(cfg, client, obs.NewLogger(f.logs, obs.Options{}))
	require.NoError(t, err)
	f.consumer = c
	return f
}

// TestMixedBatch runs one batch holding every kind of result against real
// queues: only the transient message is reported; the permanent ones are in
// the DLQ with their reasons and gone from the source; the rest of the batch
// is processed.
func TestMixedBatch(t *testing.T) {
	t.Parallel()
	f := setup(t, sqsconsumer.Config{Concurrency: 4}, 60*time.Second, 5)
	ctx := context.Background()

	ids := map[string]string{
		"ok":       events.NewID(),
		"version":  events.NewID(),
		"conflict": events.NewID(),
		"dup":      events.NewID(),
		"flaky":    events.NewID(),
	}
	for _, name := range []string{"ok", "version", "conflict", "dup", "flaky"} {
		version := 1
		if name == "version" {
			version = 9
		}
		send(t, f.url, envelope(ids[name], version), map[string]string{"type": "enrollment.created", "event_id": ids[name]})
	}
	msgs := receive(t, f.url, 5, 5*time.Second)
	require.Len(t, msgs, 5)
	ev := lambdaEvent(msgs)

	var mu sync.Mutex
	handled := map[string]bool{}
	resp := f.consumer.Process(ctx, ev, func(ctx context.Context, m sqsconsumer.Message) error {
		env, err := events.Decode([]byte(m.Body))
		if err != nil {
			return err
		}
		mu.Lock()
		handled[env.EventID] = true
		mu.Unlock()
		switch env.EventID {
		case ids["conflict"]:
			return fmt.Errorf("apply: %w", inbox.ErrContractConflict)
		case ids["dup"]:
			return fmt.Errorf("apply: %w", inbox.ErrDuplicate)
		case ids["flaky"]:
			return errors.New("throttled")
		}
		return nil
	})
	settle(t, f.url, ev, resp)

	flakyMsg := messageWithEventID(t, ev.Records, ids["flaky"])
	require.Equal(t, []string{flakyMsg}, sqsconsumertest.FailedIDs(resp))
	require.Len(t, handled, 4, "every decodable message was handled, whatever the others did")

	dead := receive(t, f.dlqURL, 2, 5*time.Second)
	require.Len(t, dead, 2)
	byEvent := map[string]map[string]string{}
	bodies := map[string]string{}
	for _, m := range dead {
		attrs := stringAttrs(m)
		byEvent[attrs["event_id"]] = attrs
		bodies[attrs["event_id"]] = aws.ToString(m.Body)
	}
	version := byEvent[ids["version"]]
	require.Equal(t, "unsupported_version", version["dlq_code"])
	require.Contains(t, version["dlq_reason"], "unsupported event schema version")
	require.Equal(t, f.url, version["source_queue"])
	require.Equal(t, messageWithEventID(t, ev.Records, ids["version"]), version["original_message_id"])
	require.Equal(t, "1", version["receive_count"])
	require.Equal(t, "enrollment.created", version["type"], "original attributes travel with the dead letter")
	require.Equal(t, envelope(ids["version"], 9), bodies[ids["version"]], "the original body, unchanged")

	conflict := byEvent[ids["conflict"]]
	require.Equal(t, "contract_conflict", conflict["dlq_code"])
	require.Contains(t, conflict["dlq_reason"], "different content")

	// The source queue holds only the transient message, invisible for now.
	require.Empty(t, receive(t, f.url, 1, 0))

	// One log line per dead letter and retry, with the ids; one metrics line.
	var deadLines, retryLines int
	for _, l := range jsonLines(t, f.logs) {
		switch l["msg"] {
		case "message dead-lettered":
			deadLines++
			require.NotEmpty(t, l["event_id"])
			require.NotEmpty(t, l["dlq_code"])
		case "message will be retried":
			retryLines++
			require.Equal(t, ids["flaky"], l["event_id"])
			require.Equal(t, "throttled", l["error"])
		}
	}
	require.Equal(t, 2, deadLines)
	require.Equal(t, 1, retryLines)
	m := jsonLines(t, f.metrics)
	require.Len(t, m, 1)
	require.Equal(t, "test-consumer", m[0]["Function"])
	require.EqualValues(t, 2, metricValue(t, m[0], "MessagesDeadLettered"))
	require.EqualValues(t, 1, metricValue(t, m[0], "MessagesRetried"))
	require.EqualValues(t, 2, metricValue(t, m[0], "MessagesAcknowledged"))
	require.EqualValues(t, 1, metricValue(t, m[0], "DuplicateDeliveries"))
	require.Contains(t, m[0], "QueueWait")
}

// metricValue returns the single sample of a metric in an EMF line.
func metricValue(t *testing.T, line map[string]any, name string) float64 {
	t.Helper()
	switch v := line[name].(type) {
	case float64:
		return v
	case []any:
		require.Len(t, v, 1, "metric %s", name)
		return v[0].(float64)
	default:
		t.Fatalf("metric %s missing or of type %T in %v", name, line[name], line)
		return 0
	}
}

func messageWithEventID(t *testing.T, records []lambdaevents.SQSMessage, eventID string) string {
	t.Helper()
	for _, r := range records {
		if strings.Contains(r.Body, eventID) {
			return r.MessageId
		}
	}
	t.Fatalf("no message for event %s", eventID)
	return ""
}

// TestTransientFailureComesBackAfterBackoff checks that a retried message's
// visibility is really changed: the queue's own timeout is a minute, the
// backoff of a first delivery one second.
func TestTransientFailureComesBackAfterBackoff(t *testing.T) {
	t.Parallel()
	f := setup(t, sqsconsumer.Config{Jitter: noJitter}, 60*time.Second, 5)
	send(t, f.url, envelope(events.NewID(), 1), nil)
	ev := lambdaEvent(receive(t, f.url, 1, 5*time.Second))
	require.Len(t, ev.Records, 1)

	started := time.Now()
	resp := f.consumer.Process(context.Background(), ev, func(context.Context, sqsconsumer.Message) error {
		return errors.New("provider unavailable")
	})
	settle(t, f.url, ev, resp)
	require.Equal(t, []string{ev.Records[0].MessageId}, sqsconsumertest.FailedIDs(resp))

	again := receive(t, f.url, 1, 10*time.Second)
	require.Len(t, again, 1, "the message came back long before the queue's 60 s visibility timeout")
	require.GreaterOrEqual(t, time.Since(started), 900*time.Millisecond, "not before the backoff")
	require.Equal(t, "2", again[0].Attributes["ApproximateReceiveCount"])
	require.Empty(t, receive(t, f.dlqURL, 1, 0))
}

// TestLastDeliveryIsDeadLetteredWithReason: with MaxReceiveCount set, a
// transient failure of the last delivery reaches the DLQ with a reason
// instead of being moved there silently by the redrive policy.
func TestLastDeliveryIsDeadLetteredWithReason(t *testing.T) {
	t.Parallel()
	f := setup(t, sqsconsumer.Config{MaxReceiveCount: 2, Jitter: noJitter}, 60*time.Second, 2)
	send(t, f.url, envelope(events.NewID(), 1), nil)

	var lastAttempt []bool
	handler := func(_ context.Context, m sqsconsumer.Message) error {
		lastAttempt = append(lastAttempt, m.LastAttempt)
		return errors.New("provider unavailable")
	}
	for range 2 {
		ev := lambdaEvent(receive(t, f.url, 1, 10*time.Second))
		require.Len(t, ev.Records, 1)
		settle(t, f.url, ev, f.consumer.Process(context.Background(), ev, handler))
	}
	require.Equal(t, []bool{false, true}, lastAttempt)

	dead := receive(t, f.dlqURL, 1, 5*time.Second)
	require.Len(t, dead, 1)
	attrs := stringAttrs(dead[0])
	require.Equal(t, "retries_exhausted", attrs["dlq_code"])
	require.Equal(t, "provider unavailable", attrs["dlq_reason"])
	require.Equal(t, "2", attrs["receive_count"])
	require.Empty(t, receive(t, f.url, 1, 0), "acknowledged after the dead letter")
}

// TestLongWorkKeepsTheMessageInvisible: while a handler runs past the
// queue's visibility timeout, no other consumer gets the message, and
// without the extension another one would.
func TestLongWorkKeepsTheMessageInvisible(t *testing.T) {
	t.Parallel()
	const visibility = 2 * time.Second
	for _, tt := range []struct {
		name   string
		extend time.Duration
		// wantSeen: another consumer receives the message during the work.
		wantSeen bool
	}{
		{"extended", visibility, false},
		{"not extended", 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, sqsconsumer.Config{VisibilityTimeout: tt.extend}, visibility, 5)
			send(t, f.url, envelope(events.NewID(), 1), nil)
			ev := lambdaEvent(receive(t, f.url, 1, 5*time.Second))
			require.Len(t, ev.Records, 1)

			var seen int
			resp := f.consumer.Process(context.Background(), ev, func(context.Context, sqsconsumer.Message) error {
				// The work: 1.5 visibility timeouts, watching the queue.
				seen = len(receive(t, f.url, 1, visibility*3/2))
				return nil
			})
			require.Empty(t, sqsconsumertest.FailedIDs(resp))
			require.Equal(t, tt.wantSeen, seen > 0)
		})
	}
}

func noJitter(time.Duration) time.Duration { return 0 }

// TestRetryBudgetOutlivesMaxReceiveCount: with a retry budget in time, a
// message that keeps failing transiently is retried as delayed copies, each
// received once, far beyond the queue's maxReceiveCount and without the
// redrive policy ever moving it; once its next retry could come after the
// deadline it is dead-lettered with retry_deadline_passed and every
// delivery counted, and the dead letter carries no budget of its own.
func TestRetryBudgetOutlivesMaxReceiveCount(t *testing.T) {
	t.Parallel()
	const budget = 5 * time.Second
	f := setup(t, sqsconsumer.Config{RetryBudget: budget, BackoffCap: time.Second, Jitter: noJitter}, 60*time.Second, 2)
	send(t, f.url, envelope(events.NewID(), 1), map[string]string{"type": "enrollment.created", "event_id": "e-1"})

	var attempts []int
	var deadlines []time.Time
	handler := func(_ context.Context, m sqsconsumer.Message) error {
		attempts = append(attempts, m.Attempt)
		deadlines = append(deadlines, m.Deadline)
		return errors.New("provider unavailable")
	}
	for {
		msgs := receive(t, f.url, 1, 30*time.Second)
		require.Len(t, msgs, 1, "the retry's copy arrives")
		require.Equal(t, "1", msgs[0].Attributes["ApproximateReceiveCount"], "each copy is received once")
		require.Equal(t, "e-1", stringAttrs(msgs[0])["event_id"], "the copy keeps the original attributes")
		ev := lambdaEvent(msgs)
		resp := f.consumer.Process(context.Background(), ev, handler)
		require.Empty(t, sqsconsumertest.FailedIDs(resp), "a retry is a new copy; the received one is acknowledged")
		settle(t, f.url, ev, resp)
		if dead := receive(t, f.dlqURL, 1, 0); len(dead) > 0 {
			attrs := stringAttrs(dead[0])
			require.Equal(t, "retry_deadline_passed", attrs["dlq_code"])
			require.Equal(t, "provider unavailable", attrs["dlq_reason"])
			require.Equal(t, strconv.Itoa(len(attempts)), attrs["receive_count"], "every copy's delivery counted")
			require.Equal(t, "e-1", attrs["event_id"])
			require.NotContains(t, attrs, "retry_deadline", "a redrive starts a fresh budget")
			require.NotContains(t, attrs, "retry_attempt")
			break
		}
	}
	require.Greater(t, len(attempts), 2, "more attempts than the queue's maxReceiveCount")
	for i, a := range attempts {
		require.Equal(t, i+1, a, "attempts count across copies")
		require.Equal(t, deadlines[0], deadlines[i], "one deadline for every copy")
	}
	require.Empty(t, receive(t, f.url, 1, 2*time.Second), "nothing left in the source queue")
}
