package relay_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/outbox"
	"github.com/clubdev/club/internal/relay"
)

func TestPublishInOrderThenMark(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rows := w.enroll(5, time.Second)
	pub := &fakePublisher{}
	var metrics syncBuffer
	publishedAt := t0.Add(time.Minute)
	r := newRelay(t, relay.Config{
		Routes: relay.Routes{events.KindEvent: pub}, Outbox: w.store.Outbox,
		Metrics: &metrics, MetricDimensions: map[string]string{"Function": "relay"},
		Now: func() time.Time { return publishedAt },
	})

	n, err := r.Publish(w.ctx, rows)
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.Equal(t, eventIDs(rows), pub.attempted(), "published in row order")
	require.Equal(t, []int{5}, pub.callSizes(), "rows of one kind go to their publisher together")
	for i, m := range pub.messages() {
		require.Equal(t, rows[i].Payload, m.Body, "the body is the stored envelope, byte for byte")
		require.Equal(t, events.TypeEnrollmentCreated, m.Type)
		require.Equal(t, rows[i].AggregateID, m.AggregateID)
		env, err := events.Decode(m.Body)
		require.NoError(t, err)
		require.Equal(t, m.EventID, env.EventID)
	}
	require.Empty(t, w.pendingIDs(), "every row is marked")
	for _, row := range rows {
		got := w.row(row.EventID)
		require.Equal(t, outbox.StatusPublished, got.Status)
		require.True(t, publishedAt.Equal(got.PublishedAt))
	}
	// Rows were created at t0, t0+1s, ... and published at t0+1m.
	require.Equal(t, []float64{60_000, 59_000, 58_000, 57_000, 56_000},
		metrics.metric(t, relay.MetricPublishLag, map[string]string{"Function": "relay"}))
}

func TestPublishStopsAtFirstFailure(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rows := w.enroll(5, time.Second)
	pub := &fakePublisher{}
	pub.fail(rows[2].EventID, errors.New("throttled"))
	r := newRelay(t, relay.Config{Routes: relay.Routes{events.KindEvent: pub}, Outbox: w.store.Outbox})

	n, err := r.Publish(w.ctx, rows)
	require.Equal(t, 2, n, "rows before the failure are done")
	require.ErrorContains(t, err, "throttled")
	require.ErrorContains(t, err, rows[2].EventID)
	require.Equal(t, eventIDs(rows[:3]), pub.attempted(), "nothing after the failed row is attempted")
	require.Equal(t, eventIDs(rows[2:]), w.pendingIDs(), "the failed row and those after it stay pending")
	require.Equal(t, outbox.StatusPublished, w.row(rows[1].EventID).Status)
}

func TestRetryRepublishesWithTheSameEventID(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rows := w.enroll(3, time.Second)
	pub := &fakePublisher{}
	// The mark of row 1 fails after its publish succeeded: the window
	// between publish and mark.
	marker := failingMarker{Marker: w.store.Outbox, failOn: map[string]bool{rows[1].EventID: true}}
	first := newRelay(t, relay.Config{Routes: relay.Routes{events.KindEvent: pub}, Outbox: marker})
	n, err := first.Publish(w.ctx, rows)
	require.Equal(t, 1, n)
	require.ErrorContains(t, err, "published but not marked")
	require.Equal(t, []string{rows[1].EventID}, w.pendingIDs(),
		"row 2 was published in the same call and its mark succeeded: marks are independent")

	// The stream retries from the failed record, with a healthy store.
	retry := newRelay(t, relay.Config{Routes: relay.Routes{events.KindEvent: pub}, Outbox: w.store.Outbox})
	n, err = retry.Publish(w.ctx, rows[n:])
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Empty(t, w.pendingIDs())

	msgs := pub.messages()
	require.Equal(t, []string{rows[0].EventID, rows[1].EventID, rows[2].EventID, rows[1].EventID, rows[2].EventID},
		messageIDs(msgs), "row 1 went out twice")
	require.Equal(t, msgs[1], msgs[3], "the duplicate is identical: same event_id, same body")
}

func TestMarkIsIdempotent(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rows := w.enroll(2, time.Second)
	pub := &fakePublisher{}
	var now time.Time
	r := newRelay(t, relay.Config{
		Routes: relay.Routes{events.KindEvent: pub}, Outbox: w.store.Outbox,
		Now: func() time.Time { return now },
	})
	now = t0.Add(time.Minute)
	n, err := r.Publish(w.ctx, rows)
	require.NoError(t, err)
	require.Equal(t, 2, n)

	// A replayed stream batch (or the sweeper) publishes and marks again.
	now = t0.Add(time.Hour)
	n, err = r.Publish(w.ctx, rows)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, row := range rows {
		got := w.row(row.EventID)
		require.Equal(t, outbox.StatusPublished, got.Status)
		require.True(t, t0.Add(time.Minute).Equal(got.PublishedAt), "the first mark is kept")
	}
}

func TestRowGoneCountsAsMarked(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// A row that is not in the store: only published rows expire, so it was
	// published before and there is nothing to mark.
	env, err := events.New(events.NewID(), t0, events.EnrollmentCancelled{EnrollmentID: "e", ClassID: "c", StudentID: "s"})
	require.NoError(t, err)
	gone, err := outbox.NewRow(env, t0)
	require.NoError(t, err)
	pub := &fakePublisher{}
	r := newRelay(t, relay.Config{Routes: relay.Routes{events.KindEvent: pub}, Outbox: w.store.Outbox})
	n, err := r.Publish(w.ctx, []outbox.Row{gone})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []string{gone.EventID}, pub.attempted())
}

func TestRouting(t *testing.T) {
	t.Parallel()
	eventRow := func(t *testing.T) outbox.Row { return newWorld(t).enroll(1, 0)[0] }
	unknownRow := func(t *testing.T) outbox.Row {
		r := jobRow(t, t0)
		r.Type = "grade.changed"
		return r
	}
	tests := []struct {
		name    string
		row     func(t *testing.T) outbox.Row
		wantErr string // empty: routed to the events publisher
		unknown bool
	}{
		{name: "event goes to the topic", row: eventRow},
		{name: "job has no route yet", row: func(t *testing.T) outbox.Row { return jobRow(t, t0) }, wantErr: `no route for kind "job" (type export.requested)`},
		{name: "workflow without a route in the table", row: func(t *testing.T) outbox.Row { return workflowRow(t, t0) }, wantErr: `no route for kind "workflow" (type purchase.requested)`},
		{name: "unknown type", row: unknownRow, wantErr: `no route for type "grade.changed"`, unknown: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			row := tt.row(t)
			pub := &fakePublisher{}
			marker := failingMarker{Marker: nopMarker{}}
			r := newRelay(t, relay.Config{Routes: relay.Routes{events.KindEvent: pub}, Outbox: marker})
			n, err := r.Publish(context.Background(), []outbox.Row{row})
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.Equal(t, 1, n)
				require.Equal(t, []string{row.EventID}, pub.attempted())
				return
			}
			require.Zero(t, n, "the row is not published and not marked: it stays pending")
			require.ErrorIs(t, err, relay.ErrNoRoute)
			require.ErrorContains(t, err, tt.wantErr)
			require.ErrorContains(t, err, row.EventID)
			require.Equal(t, tt.unknown, errors.Is(err, events.ErrUnknownType))
			require.Empty(t, pub.attempted(), "nothing is sent anywhere")
		})
	}
}

type nopMarker struct{}

func (nopMarker) MarkPublished(context.Context, string, time.Time) error { return nil }

func TestUnroutableRowStopsTheBatchInOrder(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evs := w.enroll(3, time.Second)
	rows := []outbox.Row{evs[0], evs[1], jobRow(t, t0), evs[2]}
	pub := &fakePublisher{}
	r := newRelay(t, relay.Config{Routes: relay.Routes{events.KindEvent: pub}, Outbox: w.store.Outbox})

	n, err := r.Publish(w.ctx, rows)
	require.Equal(t, 2, n)
	require.ErrorIs(t, err, relay.ErrNoRoute)
	require.Equal(t, eventIDs(evs[:2]), pub.attempted(), "the event after the job waits for it (stream order)")
	require.Equal(t, []string{evs[2].EventID}, w.pendingIDs())
}

func TestConsecutiveRowsOfAKindAreGrouped(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evs := w.enroll(3, time.Second)
	jobs := []outbox.Row{jobRow(t, t0), jobRow(t, t0)}
	rows := []outbox.Row{evs[0], evs[1], jobs[0], jobs[1], evs[2]}
	topic, queue := &fakePublisher{}, &fakePublisher{}
	r := newRelay(t, relay.Config{
		Routes: relay.Routes{events.KindEvent: topic, events.KindJob: queue},
		Outbox: failingMarker{Marker: w.store.Outbox}, // job rows are not in the store: counted as marked
	})
	n, err := r.Publish(w.ctx, rows)
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.Equal(t, []int{2, 1}, topic.callSizes())
	require.Equal(t, []int{2}, queue.callSizes())
	require.Equal(t, eventIDs(jobs), queue.attempted())
	require.Empty(t, w.pendingIDs())
}

// lyingPublisher breaks the Publisher contract: it returns n with err.
type lyingPublisher struct {
	n   func(msgs []relay.Message) int
	err error
}

func (p lyingPublisher) Publish(_ context.Context, msgs []relay.Message) (int, error) {
	return p.n(msgs), p.err
}

func TestPublisherBreakingItsContractMarksNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		pub  lyingPublisher
		want string
	}{
		{"fewer sent without an error", lyingPublisher{n: func(m []relay.Message) int { return len(m) - 1 }}, "reported 1 of 2 messages sent"},
		{"all sent with an error", lyingPublisher{n: func(m []relay.Message) int { return len(m) }, err: errors.New("odd")}, "reported 2 of 2 messages sent (error: odd)"},
		{"more sent than given", lyingPublisher{n: func(m []relay.Message) int { return len(m) + 1 }}, "reported 3 of 2 messages sent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			rows := w.enroll(2, time.Second)
			r := newRelay(t, relay.Config{Routes: relay.Routes{events.KindEvent: tt.pub}, Outbox: w.store.Outbox})
			n, err := r.Publish(w.ctx, rows)
			require.Zero(t, n)
			require.ErrorContains(t, err, tt.want)
			require.Len(t, w.pendingIDs(), 2, "no row is marked on a broken promise")
		})
	}
}

func TestNewRelayValidates(t *testing.T) {
	t.Parallel()
	_, err := relay.New(relay.Config{MarkConcurrency: -1})
	require.ErrorContains(t, err, "Routes is required")
	require.ErrorContains(t, err, "Outbox is required")
	require.ErrorContains(t, err, "MarkConcurrency")
}
