package sqsconsumer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club/inbox"
	"github.com/clubdev/club/internal/sqsconsumer"
	"github.com/clubdev/club/internal/sqsconsumer/sqsconsumertest"
)

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
