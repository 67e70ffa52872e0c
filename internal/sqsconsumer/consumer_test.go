package sqsconsumer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

func TestPanicFailsOnlyItsMessage(t *testing.T) {
	t.Parallel()
	c, fake := newUnit(t, sqsconsumer.Config{Concurrency: 2, Jitter: noJitter})
	resp := c.Process(context.Background(), lambdaevents.SQSEvent{Records: []lambdaevents.SQSMessage{record("a", 1, ""), record("b", 1, "")}},
		func(_ context.Context, m sqsconsumer.Message) error {
			if m.ID == "a" {
				panic("bug")
			}
			return nil
		})
	require.Equal(t, []string{"a"}, sqsconsumertest.FailedIDs(resp))
	require.Empty(t, fake.DeadLetters(), "a panic is not a reason to dead-letter at once")
}
