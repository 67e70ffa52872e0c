package relay_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/outbox"
	"github.com/clubdev/club/internal/relay"
	"github.com/clubdev/club/internal/store/memstore"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// farFuture lists every pending row regardless of age.
var farFuture = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

// fakePublisher records what it was asked to publish and fails on demand.
// It is safe for concurrent use.
type fakePublisher struct {
	mu    sync.Mutex
	calls [][]relay.Message // one entry per Publish call
	// failOn makes the publish of these event ids fail (once each, unless
	// failAlways).
	failOn     map[string]error
	failAlways bool
	// gate, if set, is called at the start of each Publish (to block it).
	gate func()
}

func (p *fakePublisher) Publish(ctx context.Context, msgs []relay.Message) (int, error) {
	if p.gate != nil {
		p.gate()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var call []relay.Message
	defer func() { p.calls = append(p.calls, call) }()
	for i, m := range msgs {
		call = append(call, m)
		if err, ok := p.failOn[m.EventID]; ok {
			if !p.failAlways {
				delete(p.failOn, m.EventID)
			}
			return i, fmt.Errorf("publish event %s: %w", m.EventID, err)
		}
	}
	return len(msgs), nil
}

func (p *fakePublisher) fail(eventID string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failOn == nil {
		p.failOn = map[string]error{}
	}
	p.failOn[eventID] = err
}

// attempted lists the event ids of every message it was asked to publish,
// in order, including failed attempts.
func (p *fakePublisher) attempted() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ids []string
	for _, c := range p.calls {
		for _, m := range c {
			ids = append(ids, m.EventID)
		}
	}
	return ids
}

func (p *fakePublisher) messages() []relay.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []relay.Message
	for _, c := range p.calls {
		out = append(out, c...)
	}
	return out
}

func (p *fakePublisher) callSizes() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var sizes []int
	for _, c := range p.calls {
		sizes = append(sizes, len(c))
	}
	return sizes
}

// failingMarker fails MarkPublished for chosen ids and delegates the rest.
type failingMarker struct {
	relay.Marker
	failOn map[string]bool
}

func (m failingMarker) MarkPublished(ctx context.Context, eventID string, at time.Time) error {
	if m.failOn[eventID] {
		return errors.New("throttled")
	}
	return m.Marker.MarkPublished(ctx, eventID, at)
}

// syncBuffer collects EMF lines from concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// metric returns every sample of the named metric, across lines, and checks
// the lines' namespace and dimensions.
func (b *syncBuffer) metric(t *testing.T, name string, dims map[string]string) []float64 {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var samples []float64
	sc := bufio.NewScanner(strings.NewReader(b.buf.String()))
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		v, ok := line[name]
		if !ok {
			continue
		}
		require.Contains(t, sc.Text(), `"Namespace":"Club"`)
		for k, want := range dims {
			require.Equal(t, want, line[k], "dimension %s", k)
		}
		switch v := v.(type) {
		case float64:
			samples = append(samples, v)
		case []any:
			for _, x := range v {
				samples = append(samples, x.(float64))
			}
		}
	}
	return samples
}

// world is a memstore with a class to enroll in and a controllable clock.
type world struct {
	t     *testing.T
	ctx   context.Context
	store *memstore.Store
	svc   *enrollment.Service
	class class.Class
	mu    sync.Mutex
	now   time.Time
	n     int
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, ctx: context.Background(), store: memstore.New(), now: t0}
	svc, err := enrollment.NewService(enrollment.Deps{
		Store: w.store.Enrollments, Classes: w.store.Classes, Idempotency: w.store.Idempotency,
		Now: w.clock,
	})
	require.NoError(t, err)
	w.svc = svc
	c, err := class.New(events.NewID(), "teacher-1", "Go concurrency", 10_000, t0.Add(30*24*time.Hour))
	require.NoError(t, err)
	require.NoError(t, w.store.Classes.Create(w.ctx, c))
	w.class = c
	return w
}

func (w *world) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

func (w *world) setNow(at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = at
}

// enroll creates n enrollments, one clock step apart, and returns their
// pending outbox rows, oldest first.
func (w *world) enroll(n int, step time.Duration) []outbox.Row {
	w.t.Helper()
	ids := map[string]bool{}
	for range n {
		w.n++
		student := fmt.Sprintf("student-%04d", w.n)
		fp, err := idempotency.Fingerprint("POST", "/classes/"+w.class.ID()+"/enrollments", nil, student)
		require.NoError(w.t, err)
		res, err := w.svc.Enroll(w.ctx, enrollment.EnrollRequest{
			ClassID: w.class.ID(), StudentID: student, IdempotencyKey: fmt.Sprintf("key-%08d", w.n), RequestFingerprint: fp,
			Respond: func(enrollment.Enrollment) (idempotency.Response, error) {
				return idempotency.Response{Status: 201, Body: []byte(`{}`)}, nil
			},
		})
		require.NoError(w.t, err)
		ids[res.Enrollment.ID()] = true
		w.setNow(w.clock().Add(step))
	}
	all, err := w.store.Outbox.Unpublished(w.ctx, farFuture, 100_000)
	require.NoError(w.t, err)
	var rows []outbox.Row
	for _, r := range all {
		if ids[r.AggregateID] {
			rows = append(rows, r)
		}
	}
	require.Len(w.t, rows, n)
	return rows
}

func (w *world) row(id string) outbox.Row {
	w.t.Helper()
	r, err := w.store.Outbox.Get(w.ctx, id)
	require.NoError(w.t, err)
	return r
}

func (w *world) pendingIDs() []string {
	w.t.Helper()
	rows, err := w.store.Outbox.Unpublished(w.ctx, farFuture, 100_000)
	require.NoError(w.t, err)
	return eventIDs(rows)
}

func eventIDs(rows []outbox.Row) []string {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.EventID
	}
	return ids
}

func messageIDs(msgs []relay.Message) []string {
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = m.EventID
	}
	return ids
}

// jobRow and workflowRow are rows of kinds that the tests route only when
// they say so.
func jobRow(t *testing.T, at time.Time) outbox.Row {
	t.Helper()
	env, err := events.New(events.NewID(), at, events.ExportRequested{
		OperationID: "op-1", Kind: events.ExportKindRosterExport, ClassID: "c-1", RequestedBy: "teacher-1",
	})
	require.NoError(t, err)
	r, err := outbox.NewRow(env, at)
	require.NoError(t, err)
	return r
}

func workflowRow(t *testing.T, at time.Time) outbox.Row {
	t.Helper()
	env, err := events.New(events.NewID(), at, events.PurchaseRequested{
		PurchaseID: "p-1", IntensiveID: "i-1", StudentID: "s-1", AmountCents: 1000, Currency: "EUR",
		HoldExpiresAt: at.Add(15 * time.Minute),
	})
	require.NoError(t, err)
	r, err := outbox.NewRow(env, at)
	require.NoError(t, err)
	return r
}

func newRelay(t *testing.T, cfg relay.Config) *relay.Relay {
	t.Helper()
	r, err := relay.New(cfg)
	require.NoError(t, err)
	return r
}
