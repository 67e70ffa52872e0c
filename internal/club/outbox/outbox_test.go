package outbox_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/outbox"
)

func TestNewRow(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.FixedZone("X", 3600))
	env, err := events.New(events.NewID(), at, events.EnrollmentCancelled{EnrollmentID: "e", ClassID: "c", StudentID: "s"})
	require.NoError(t, err)
	row, err := outbox.NewRow(env, at)
	require.NoError(t, err)
	require.Equal(t, outbox.StatusPending, row.Status)
	require.Equal(t, env.EventID, row.EventID)
	require.Equal(t, env.Type, row.Type)
	require.Equal(t, "e", row.AggregateID)
	require.Equal(t, time.UTC, row.CreatedAt.Location())
	require.True(t, row.PublishedAt.IsZero())
	back, err := row.Envelope()
	require.NoError(t, err)
	require.Equal(t, env.Fingerprint(), back.Fingerprint())
	require.Equal(t, env.EventID, back.EventID)
}

func TestSortOldestFirst(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	rows := []outbox.Row{
		{EventID: "c", CreatedAt: t0.Add(time.Second)},
		{EventID: "b", CreatedAt: t0},
		{EventID: "a", CreatedAt: t0},
	}
	outbox.SortOldestFirst(rows)
	require.Equal(t, []string{"a", "b", "c"}, []string{rows[0].EventID, rows[1].EventID, rows[2].EventID})
}

func TestPendingChoosesWhatUnpublishedReturns(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	rows := []outbox.Row{
		{EventID: "late", CreatedAt: t0.Add(3 * time.Second), Status: outbox.StatusPending},
		{EventID: "b", CreatedAt: t0.Add(time.Second), Status: outbox.StatusPending},
		{EventID: "published", CreatedAt: t0, Status: outbox.StatusPublished},
		{EventID: "a", CreatedAt: t0.Add(time.Second), Status: outbox.StatusPending},
		{EventID: "first", CreatedAt: t0, Status: outbox.StatusPending},
	}
	ids := func(rows []outbox.Row) []string {
		out := []string{}
		for _, r := range rows {
			out = append(out, r.EventID)
		}
		return out
	}
	cutoff := t0.Add(3 * time.Second)
	require.Equal(t, []string{"first", "a", "b"}, ids(outbox.Pending(slices.Values(rows), cutoff, 10)),
		"pending only, created before the cutoff, oldest first, then by event id")
	require.Equal(t, []string{"first", "a"}, ids(outbox.Pending(slices.Values(rows), cutoff, 2)))
}
