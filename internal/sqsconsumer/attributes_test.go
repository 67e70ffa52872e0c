package sqsconsumer_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/sqsconsumer/sqsconsumertest"
)

// TestKeptAttributesFillWhatSQSAllows: a dead letter and a retry's copy
// carry their own attributes, then the original type and event_id, then
// the other original attributes by name, up to SQS's ten per message; an
// original attribute of the consumer's own (a stale dlq_code, the budget of
// the copy it came as) is never carried over as it was.
func TestKeptAttributesFillWhatSQSAllows(t *testing.T) {
	t.Parallel()
	attrs := map[string]string{
		"type": "enrollment.created", "event_id": "e-1",
		"dlq_code": "stale", "retry_deadline": "2100-01-01T00:00:00Z", "retry_attempt": "3",
	}
	for i := range 8 {
		attrs[fmt.Sprintf("a%d", i+1)] = "v"
	}
	for _, tt := range []struct {
		name   string
		budget time.Duration
		err    error
		want   []string
	}{
		{"dead letter", 0, sqsconsumer.Permanent("bad", errors.New("bad")),
			[]string{"a1", "a2", "a3", "dlq_code", "dlq_reason", "event_id", "original_message_id", "receive_count", "source_queue", "type"}},
		{"retry's copy", time.Hour, errors.New("throttled"),
			[]string{"a1", "a2", "a3", "a4", "a5", "a6", "event_id", "retry_attempt", "retry_deadline", "type"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, fake := newUnit(t, sqsconsumer.Config{RetryBudget: tt.budget, Jitter: noJitter})
			resp := c.Process(context.Background(), sqsconsumertest.Event(sqsconsumertest.Record("m", "body", 1, time.Now(), attrs)),
				func(context.Context, sqsconsumer.Message) error { return tt.err })
			require.Empty(t, sqsconsumertest.FailedIDs(resp))
			sent := append(fake.DeadLetters(), fake.Copies()...)
			require.Len(t, sent, 1)
			got := sent[0].Attributes
			require.Equal(t, tt.want, slices.Sorted(maps.Keys(got)))
			require.Equal(t, "enrollment.created", got["type"])
			require.Equal(t, "e-1", got["event_id"])
			if tt.budget == 0 {
				require.Equal(t, "bad", got["dlq_code"], "the consumer's own code, not the stale one")
			} else {
				require.Equal(t, "4", got["retry_attempt"], "the deliveries so far: three before, this one")
				require.Equal(t, "2100-01-01T00:00:00Z", got["retry_deadline"], "the budget's deadline travels on")
			}
		})
	}
}
