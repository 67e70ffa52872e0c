package sqsconsumer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/inbox"
	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/sqsconsumer/sqsconsumertest"
)

func newUnit(t *testing.T, cfg sqsconsumer.Config) (*sqsconsumer.Consumer, *sqsconsumertest.SQS) {
	t.Helper()
	fake := &sqsconsumertest.SQS{}
	cfg.Name = "unit"
	cfg.QueueURL = "http://sqs.local/000000000000/q"
	cfg.DLQURL = "http://sqs.local/000000000000/q-dlq"
	cfg.Metrics = io.Discard
	c, err := sqsconsumer.New(cfg, fake, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	return c, fake
}

// record builds a delivered message, in a FIFO message group if group is set.
func record(id string, receiveCount int, group string) lambdaevents.SQSMessage {
	r := sqsconsumertest.Record(id, "body-"+id, receiveCount, time.Now(), nil)
	if group != "" {
		r.Attributes["MessageGroupId"] = group
	}
	return r
}

func TestClassify(t *testing.T) {
	t.Parallel()
	decodeErr := func(body string) error {
		_, err := events.Decode([]byte(body))
		require.Error(t, err)
		return err
	}
	tests := []struct {
		name string
		err  error
		want sqsconsumer.Verdict
	}{
		{"success", nil, sqsconsumer.Verdict{Action: sqsconsumer.Ack}},
		{"duplicate", fmt.Errorf("roster: %w", inbox.ErrDuplicate), sqsconsumer.Verdict{Action: sqsconsumer.Ack, Duplicate: true}},
		{"malformed", decodeErr(`{"event_id":`), sqsconsumer.Verdict{Action: sqsconsumer.DeadLetter, Code: "malformed_event"}},
		{"unknown type", decodeErr(envelopeOfType("seat.teleported", 1)), sqsconsumer.Verdict{Action: sqsconsumer.DeadLetter, Code: "unknown_event_type"}},
		{"unsupported version", decodeErr(envelope(events.NewID(), 3)), sqsconsumer.Verdict{Action: sqsconsumer.DeadLetter, Code: "unsupported_version"}},
		{"contract conflict", fmt.Errorf("x: %w", inbox.ErrContractConflict), sqsconsumer.Verdict{Action: sqsconsumer.DeadLetter, Code: "contract_conflict"}},
		{"explicit permanent", sqsconsumer.Permanent("no_address", errors.New("no profile")), sqsconsumer.Verdict{Action: sqsconsumer.DeadLetter, Code: "no_address"}},
		{"permanent wins over wrapped sentinel", sqsconsumer.Permanent("custom", inbox.ErrContractConflict), sqsconsumer.Verdict{Action: sqsconsumer.DeadLetter, Code: "custom"}},
		{"retry after", fmt.Errorf("send: %w", sqsconsumer.RetryAfter(3*time.Second, errors.New("429"))), sqsconsumer.Verdict{Action: sqsconsumer.Retry, RetryAfter: 3 * time.Second}},
		{"transient", errors.New("connection reset"), sqsconsumer.Verdict{Action: sqsconsumer.Retry}},
		{"cancelled", context.DeadlineExceeded, sqsconsumer.Verdict{Action: sqsconsumer.Retry}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, sqsconsumer.Classify(tt.err), tt.name)
	}
}

func envelopeOfType(typ string, version int) string {
	return fmt.Sprintf(`{"event_id":%q,"type":%q,"schema_version":%d,"aggregate_id":"a","occurred_at":"2026-03-01T10:00:00Z","data":{}}`,
		events.NewID(), typ, version)
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	widest := func(n time.Duration) time.Duration { return n - 1 }
	low, _ := newUnit(t, sqsconsumer.Config{Jitter: noJitter})
	high, _ := newUnit(t, sqsconsumer.Config{Jitter: widest})
	for _, tt := range []struct {
		receiveCount int
		ceiling      time.Duration
	}{
		{1, 1 * time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {4, 8 * time.Second},
		{5, 16 * time.Second}, {6, 30 * time.Second}, {7, 30 * time.Second}, {1000, 30 * time.Second},
	} {
		require.Equal(t, time.Second, low.Backoff(tt.receiveCount), "floor at receive %d", tt.receiveCount)
		require.Equal(t, tt.ceiling, high.Backoff(tt.receiveCount), "ceiling at receive %d", tt.receiveCount)
	}

	// With real jitter every delay is a whole number of seconds in range.
	random, _ := newUnit(t, sqsconsumer.Config{})
	for range 200 {
		d := random.Backoff(4)
		require.True(t, d >= time.Second && d <= 8*time.Second && d%time.Second == 0, "delay %s", d)
	}
}

// TestRetryDelays checks the visibility the consumer sets for each kind of
// transient result.
func TestRetryDelays(t *testing.T) {
	t.Parallel()
	widest := func(n time.Duration) time.Duration { return n - 1 }
	tests := []struct {
		name         string
		err          error
		receiveCount int
		jitter       func(time.Duration) time.Duration
		want         time.Duration
	}{
		{"backoff floor", errors.New("boom"), 4, noJitter, time.Second},
		{"backoff ceiling, first delivery", errors.New("boom"), 1, widest, time.Second},
		{"backoff ceiling, fourth delivery", errors.New("boom"), 4, widest, 8 * time.Second},
		{"Retry-After honoured", sqsconsumer.RetryAfter(5*time.Second, errors.New("429")), 1, noJitter, 5 * time.Second},
		{"Retry-After plus at most one base of jitter", sqsconsumer.RetryAfter(5*time.Second, errors.New("429")), 1, widest, 6 * time.Second},
		{"Retry-After rounded up", sqsconsumer.RetryAfter(1500*time.Millisecond, errors.New("429")), 1, noJitter, 2 * time.Second},
		{"Retry-After capped", sqsconsumer.RetryAfter(10*time.Minute, errors.New("429")), 1, widest, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, fake := newUnit(t, sqsconsumer.Config{Jitter: tt.jitter})
			resp := c.Process(context.Background(), lambdaevents.SQSEvent{Records: []lambdaevents.SQSMessage{record("m", tt.receiveCount, "")}},
				func(context.Context, sqsconsumer.Message) error { return tt.err })
			require.Equal(t, []string{"m"}, sqsconsumertest.FailedIDs(resp))
			d, ok := fake.Visibility("m")
			require.True(t, ok)
			require.Equal(t, tt.want, d)
			require.Empty(t, fake.DeadLetters())
		})
	}
}

func TestDeadLetterSendFailureRetriesInsteadOfLosing(t *testing.T) {
	t.Parallel()
	c, fake := newUnit(t, sqsconsumer.Config{Jitter: noJitter})
	fake.FailSends(errors.New("sqs unavailable"))
	resp := c.Process(context.Background(), lambdaevents.SQSEvent{Records: []lambdaevents.SQSMessage{record("m", 1, "")}},
		func(context.Context, sqsconsumer.Message) error {
			return sqsconsumer.Permanent("bad", errors.New("bad message"))
		})
	require.Equal(t, []string{"m"}, sqsconsumertest.FailedIDs(resp), "not acknowledged: it is in no queue but the source")
	d, ok := fake.Visibility("m")
	require.True(t, ok)
	require.Equal(t, time.Second, d)
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

// TestFIFOGroupsKeepOrder: within a message group, messages run in batch
// order and a failure holds back the rest of the group; other groups go on.
func TestFIFOGroupsKeepOrder(t *testing.T) {
	t.Parallel()
	c, fake := newUnit(t, sqsconsumer.Config{Concurrency: 4, Jitter: noJitter})
	ev := lambdaevents.SQSEvent{Records: []lambdaevents.SQSMessage{
		record("g1-a", 1, "g1"), record("g2-a", 1, "g2"), record("g1-b", 1, "g1"),
		record("g1-c", 1, "g1"), record("g2-b", 1, "g2"),
	}}
	var mu sync.Mutex
	var order []string
	resp := c.Process(context.Background(), ev, func(_ context.Context, m sqsconsumer.Message) error {
		mu.Lock()
		order = append(order, m.ID)
		mu.Unlock()
		if m.ID == "g1-b" {
			return errors.New("transient")
		}
		return nil
	})
	require.NotContains(t, order, "g1-c", "held back behind the failure in its group")
	require.Less(t, indexOf(order, "g1-a"), indexOf(order, "g1-b"))
	require.Less(t, indexOf(order, "g2-a"), indexOf(order, "g2-b"))
	failedDelay, ok := fake.Visibility("g1-b")
	require.True(t, ok)
	heldDelay, ok := fake.Visibility("g1-c")
	require.True(t, ok)
	require.Equal(t, failedDelay, heldDelay, "the held-back message returns with the failed one")
	// The response lists failures in batch order, as the event source
	// mapping expects for FIFO queues.
	require.Equal(t, []string{"g1-b", "g1-c"}, sqsconsumertest.FailedIDs(resp))
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestConcurrencyIsBounded: no more than Concurrency handlers run at once,
// and that many do.
func TestConcurrencyIsBounded(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{1, 3} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			t.Parallel()
			c, _ := newUnit(t, sqsconsumer.Config{Concurrency: limit})
			var ev lambdaevents.SQSEvent
			for i := range 10 {
				ev.Records = append(ev.Records, record(fmt.Sprint(i), 1, ""))
			}
			var inFlight, peak atomic.Int32
			full := make(chan struct{})
			var once sync.Once
			var order []string
			var mu sync.Mutex
			resp := c.Process(context.Background(), ev, func(_ context.Context, m sqsconsumer.Message) error {
				n := inFlight.Add(1)
				defer inFlight.Add(-1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				if n == int32(limit) {
					once.Do(func() { close(full) })
				}
				select { // the first handlers wait until the limit is reached
				case <-full:
				case <-time.After(5 * time.Second):
					return errors.New("limit never reached")
				}
				mu.Lock()
				order = append(order, m.ID)
				mu.Unlock()
				return nil
			})
			require.Empty(t, sqsconsumertest.FailedIDs(resp))
			require.Equal(t, int32(limit), peak.Load())
			if limit == 1 {
				require.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, order, "sequential means batch order")
			}
		})
	}
}

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	valid := sqsconsumer.Config{Name: "n", QueueURL: "q", DLQURL: "d"}
	tests := []struct {
		name   string
		change func(*sqsconsumer.Config)
	}{
		{"no name", func(c *sqsconsumer.Config) { c.Name = "" }},
		{"no queue", func(c *sqsconsumer.Config) { c.QueueURL = "" }},
		{"no DLQ", func(c *sqsconsumer.Config) { c.DLQURL = "" }},
		{"DLQ is the queue", func(c *sqsconsumer.Config) { c.DLQURL = c.QueueURL }},
		{"negative concurrency", func(c *sqsconsumer.Config) { c.Concurrency = -1 }},
		{"cap below base", func(c *sqsconsumer.Config) { c.BackoffBase, c.BackoffCap = 10*time.Second, time.Second }},
		{"sub-second visibility", func(c *sqsconsumer.Config) { c.VisibilityTimeout = time.Second }},
	}
	_, err := sqsconsumer.New(valid, &sqsconsumertest.SQS{}, nil)
	require.NoError(t, err)
	_, err = sqsconsumer.New(valid, nil, nil)
	require.Error(t, err, "nil client")
	for _, tt := range tests {
		cfg := valid
		tt.change(&cfg)
		_, err := sqsconsumer.New(cfg, &sqsconsumertest.SQS{}, nil)
		require.Error(t, err, tt.name)
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	cfg, err := sqsconsumer.ConfigFromEnv(env(map[string]string{"QUEUE_URL": "q", "DLQ_URL": "d", "MAX_RECEIVE_COUNT": "8"}))
	require.NoError(t, err)
	require.Equal(t, sqsconsumer.Config{QueueURL: "q", DLQURL: "d", MaxReceiveCount: 8}, cfg)

	cfg, err = sqsconsumer.ConfigFromEnv(env(map[string]string{"QUEUE_URL": "q", "DLQ_URL": "d"}))
	require.NoError(t, err)
	require.Zero(t, cfg.MaxReceiveCount, "optional")

	_, err = sqsconsumer.ConfigFromEnv(env(map[string]string{"MAX_RECEIVE_COUNT": "zero"}))
	require.ErrorContains(t, err, "QUEUE_URL is required")
	require.ErrorContains(t, err, "DLQ_URL is required")
	require.ErrorContains(t, err, "MAX_RECEIVE_COUNT")
}

// TestFIFODeadLetter: a FIFO queue's dead letters keep their message group and
// are deduplicated by the original message id, so a retried send of the
// same dead letter is stored once.
func TestFIFODeadLetter(t *testing.T) {
	t.Parallel()
	fake := &sqsconsumertest.SQS{}
	c, err := sqsconsumer.New(sqsconsumer.Config{
		Name: "fifo", QueueURL: "http://sqs.local/000000000000/q.fifo", DLQURL: "http://sqs.local/000000000000/q-dlq.fifo", Metrics: io.Discard,
	}, fake, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	resp := c.Process(context.Background(), lambdaevents.SQSEvent{Records: []lambdaevents.SQSMessage{record("m", 1, "student-7")}},
		func(context.Context, sqsconsumer.Message) error {
			return sqsconsumer.Permanent("bad", errors.New("bad"))
		})
	require.Empty(t, sqsconsumertest.FailedIDs(resp))
	dead := fake.DeadLetters()
	require.Len(t, dead, 1)
	require.Equal(t, "student-7", dead[0].GroupID)
	require.Equal(t, "m", dead[0].DeduplicationID)
}

// TestProcessBatchSettlesEachMessage: one call for the whole batch, and each
// message gets its own verdict: acknowledged, dead-lettered with its code,
// or retried after a delay.
func TestProcessBatchSettlesEachMessage(t *testing.T) {
	t.Parallel()
	c, fake := newUnit(t, sqsconsumer.Config{Jitter: noJitter})
	ev := sqsconsumertest.Event(record("ok", 1, ""), record("dup", 2, ""), record("bad", 1, ""), record("later", 1, ""))
	var calls [][]string
	resp := c.ProcessBatch(context.Background(), ev, func(_ context.Context, msgs []sqsconsumer.Message) []error {
		var ids []string
		for _, m := range msgs {
			ids = append(ids, m.ID)
		}
		calls = append(calls, ids)
		return []error{nil, inbox.ErrDuplicate, sqsconsumer.Permanent("bad_thing", errors.New("bad")), errors.New("throttled")}
	})
	require.Equal(t, [][]string{{"ok", "dup", "bad", "later"}}, calls, "one call with every message, in batch order")
	require.Equal(t, []string{"later"}, sqsconsumertest.FailedIDs(resp))
	d, ok := fake.Visibility("later")
	require.True(t, ok)
	require.Equal(t, time.Second, d)
	dl := fake.DeadLetters()
	require.Len(t, dl, 1)
	require.Equal(t, "bad_thing", dl[0].Attributes["dlq_code"])
}

// TestProcessBatchFailsEveryMessageOfABrokenCall: a panic, or a result per
// message missing, fails the batch's messages transiently, none is lost or
// dead-lettered for it.
func TestProcessBatchFailsEveryMessageOfABrokenCall(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]sqsconsumer.BatchHandler{
		"panic":         func(context.Context, []sqsconsumer.Message) []error { panic("bug") },
		"short results": func(context.Context, []sqsconsumer.Message) []error { return []error{nil} },
	} {
		c, fake := newUnit(t, sqsconsumer.Config{Jitter: noJitter})
		resp := c.ProcessBatch(context.Background(), sqsconsumertest.Event(record("a", 1, ""), record("b", 1, "")), h)
		require.Equal(t, []string{"a", "b"}, sqsconsumertest.FailedIDs(resp), name)
		require.Empty(t, fake.DeadLetters(), name)
	}
}

// TestProcessBatchKeepsFIFOOrder: a FIFO batch goes one message per call,
// and a failure holds back the rest of its group as Process does.
func TestProcessBatchKeepsFIFOOrder(t *testing.T) {
	t.Parallel()
	c, _ := newUnit(t, sqsconsumer.Config{Jitter: noJitter})
	var calls [][]string
	resp := c.ProcessBatch(context.Background(), sqsconsumertest.Event(record("a", 1, "g"), record("b", 1, "g"), record("c", 1, "g")),
		func(_ context.Context, msgs []sqsconsumer.Message) []error {
			calls = append(calls, []string{msgs[0].ID})
			if msgs[0].ID == "b" {
				return []error{errors.New("transient")}
			}
			return []error{nil}
		})
	require.Equal(t, [][]string{{"a"}, {"b"}}, calls)
	require.Equal(t, []string{"b", "c"}, sqsconsumertest.FailedIDs(resp))
}
