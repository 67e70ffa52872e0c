package relay_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/lease"
	"github.com/clubdev/club/internal/club/outbox"
	"github.com/clubdev/club/internal/relay"
)

// sweepSetup is a sweeper over a world's memstore with a fake publisher.
type sweepSetup struct {
	*world
	pub     *fakePublisher
	metrics *syncBuffer
	relay   *relay.Relay
}

func newSweepSetup(t *testing.T) *sweepSetup {
	t.Helper()
	w := newWorld(t)
	s := &sweepSetup{world: w, pub: &fakePublisher{}, metrics: &syncBuffer{}}
	s.relay = newRelay(t, relay.Config{
		Routes: relay.Routes{events.KindEvent: s.pub}, Outbox: w.store.Outbox, Now: w.clock,
	})
	return s
}

func (s *sweepSetup) sweeper(cfg relay.SweeperConfig) *relay.Sweeper {
	s.t.Helper()
	cfg.Relay, cfg.Now, cfg.Metrics = s.relay, s.clock, s.metrics
	cfg.MetricDimensions = map[string]string{"Function": "outbox-sweeper"}
	if cfg.Outbox == nil {
		cfg.Outbox = s.store.Outbox
	}
	if cfg.Leases == nil {
		cfg.Leases = s.store.Leases
	}
	if cfg.SweepAfter == 0 {
		cfg.SweepAfter = time.Minute
	}
	sw, err := relay.NewSweeper(cfg)
	require.NoError(s.t, err)
	return sw
}

func (s *sweepSetup) gauge(name string) float64 {
	s.t.Helper()
	v := s.metrics.metric(s.t, name, map[string]string{"Function": "outbox-sweeper"})
	require.Len(s.t, v, 1, name)
	return v[0]
}

func TestSweepRespectsTheThreshold(t *testing.T) {
	t.Parallel()
	s := newSweepSetup(t)
	rows := s.enroll(5, 30*time.Second) // created at t0, +30s, ..., +2m
	s.setNow(t0.Add(3 * time.Minute))

	res, err := s.sweeper(relay.SweeperConfig{SweepAfter: 90 * time.Second}).Sweep(s.ctx, "run-1")
	require.NoError(t, err)
	// Older than 90 s at t0+3m: created before t0+1m30s, i.e. the first three.
	require.Equal(t, relay.SweepResult{
		Owner: "run-1", Stale: 3, Republished: 3, OldestUnpublishedAge: 3 * time.Minute,
	}, res)
	require.Equal(t, eventIDs(rows[:3]), s.pub.attempted(), "oldest first")
	require.Equal(t, eventIDs(rows[3:]), s.pendingIDs(), "young rows are left to the stream relay")
	for _, m := range s.pub.messages() {
		require.Equal(t, s.row(m.EventID).Payload, m.Body, "republished with the original event_id and body")
	}
	require.Equal(t, 180_000.0, s.gauge(relay.MetricOldestUnpublishedAge))
	require.Equal(t, 3.0, s.gauge(relay.MetricStaleUnpublished))
	require.Equal(t, 3.0, s.gauge(relay.MetricRepublished))
	require.Equal(t, 0.0, s.gauge(relay.MetricSweepFailed))
}

func TestSweepReportsTheOldestRowEvenWhenNothingIsStale(t *testing.T) {
	t.Parallel()
	s := newSweepSetup(t)
	s.enroll(2, 10*time.Second)
	s.setNow(t0.Add(40 * time.Second))

	res, err := s.sweeper(relay.SweeperConfig{SweepAfter: time.Minute}).Sweep(s.ctx, "run-1")
	require.NoError(t, err)
	require.Zero(t, res.Stale)
	require.Equal(t, 40*time.Second, res.OldestUnpublishedAge)
	require.Empty(t, s.pub.attempted())
	require.Len(t, s.pendingIDs(), 2)
}

func TestSweepNothingPending(t *testing.T) {
	t.Parallel()
	s := newSweepSetup(t)
	res, err := s.sweeper(relay.SweeperConfig{}).Sweep(s.ctx, "run-1")
	require.NoError(t, err)
	require.Equal(t, relay.SweepResult{Owner: "run-1"}, res)
	require.Equal(t, 0.0, s.gauge(relay.MetricOldestUnpublishedAge), "the gauge is reported even at zero")
	require.Equal(t, 0.0, s.gauge(relay.MetricStaleUnpublished), "so is the backlog")
}

func TestSweepIsBounded(t *testing.T) {
	t.Parallel()
	s := newSweepSetup(t)
	rows := s.enroll(12, time.Second)
	s.setNow(t0.Add(time.Hour))
	sw := s.sweeper(relay.SweeperConfig{Limit: 5})

	res, err := sw.Sweep(s.ctx, "run-1")
	require.NoError(t, err)
	require.Equal(t, 5, res.Stale)
	require.True(t, res.LimitReached)
	require.Equal(t, 5, res.Republished)
	require.Equal(t, eventIDs(rows[:5]), s.pub.attempted(), "the oldest five")
	require.Equal(t, eventIDs(rows[5:]), s.pendingIDs())

	// The next runs take the rest.
	for _, run := range []string{"run-2", "run-3"} {
		_, err := sw.Sweep(s.ctx, run)
		require.NoError(t, err)
	}
	require.Empty(t, s.pendingIDs())
	require.Equal(t, eventIDs(rows), s.pub.attempted(), "each row exactly once, in age order")
}

func TestSweepLeaseContention(t *testing.T) {
	t.Parallel()
	s := newSweepSetup(t)
	rows := s.enroll(4, time.Second)
	s.setNow(t0.Add(time.Hour))

	// The first sweeper blocks inside its first publish until the second
	// one has tried to start.
	entered, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.pub.gate = func() {
		once.Do(func() {
			close(entered)
			<-proceed
		})
	}
	a, b := s.sweeper(relay.SweeperConfig{}), s.sweeper(relay.SweeperConfig{})

	type outcome struct {
		res relay.SweepResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := a.Sweep(s.ctx, "sweeper-a")
		done <- outcome{res, err}
	}()
	<-entered
	resB, err := b.Sweep(s.ctx, "sweeper-b")
	require.NoError(t, err, "a held lease is not an error")
	require.Equal(t, relay.SweepResult{Owner: "sweeper-b", LeaseHeld: true}, resB)
	close(proceed)
	outA := <-done
	require.NoError(t, outA.err)
	require.Equal(t, 4, outA.res.Republished)
	require.Equal(t, eventIDs(rows), s.pub.attempted(), "one sweeper worked, each row once")
	require.Empty(t, s.pendingIDs())

	// A released the lease: a third sweeper gets it at once.
	resC, err := s.sweeper(relay.SweeperConfig{}).Sweep(s.ctx, "sweeper-c")
	require.NoError(t, err)
	require.False(t, resC.LeaseHeld)
}

func TestSweepTakesOverAnExpiredLease(t *testing.T) {
	t.Parallel()
	s := newSweepSetup(t)
	s.enroll(2, time.Second)
	now := t0.Add(time.Hour)
	s.setNow(now)
	// A sweeper that died a minute ago without releasing its 50 s lease.
	_, err := s.store.Leases.Acquire(s.ctx, relay.DefaultLeaseName, "dead", now.Add(-time.Minute), relay.DefaultLeaseTTL)
	require.NoError(t, err)
	// And one that is alive right now.
	_, err = s.store.Leases.Acquire(s.ctx, "other-work", "alive", now, time.Minute)
	require.NoError(t, err)

	res, err := s.sweeper(relay.SweeperConfig{}).Sweep(s.ctx, "run-1")
	require.NoError(t, err)
	require.False(t, res.LeaseHeld)
	require.Equal(t, 2, res.Republished)
}

func TestSweepRetriedInvocationRenewsItsOwnLease(t *testing.T) {
	t.Parallel()
	s := newSweepSetup(t)
	s.setNow(t0.Add(time.Hour))
	// An async retry of the same invocation reuses its request id while its
	// first attempt's lease may still be live.
	_, err := s.store.Leases.Acquire(s.ctx, relay.DefaultLeaseName, "request-1", s.clock(), relay.DefaultLeaseTTL)
	require.NoError(t, err)
	res, err := s.sweeper(relay.SweeperConfig{}).Sweep(s.ctx, "request-1")
	require.NoError(t, err)
	require.False(t, res.LeaseHeld)
}

// listerOf serves fixed rows as the stale ones.
type listerOf []outbox.Row

func (l listerOf) Unpublished(_ context.Context, before time.Time, limit int) ([]outbox.Row, error) {
	var out []outbox.Row
	for _, r := range l {
		if r.CreatedAt.Before(before) && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

func TestSweepSkipsPastUnroutableAndFailedRows(t *testing.T) {
	t.Parallel()
	s := newSweepSetup(t)
	evs := s.enroll(4, time.Second)
	job := jobRow(t, t0)
	rows := []outbox.Row{job, evs[0], evs[1], evs[2], evs[3]}
	outbox.SortOldestFirst(rows)
	s.pub.fail(evs[1].EventID, errors.New("throttled"))
	s.setNow(t0.Add(time.Hour))

	res, err := s.sweeper(relay.SweeperConfig{Outbox: listerOf(rows)}).Sweep(s.ctx, "run-1")
	require.ErrorContains(t, err, "throttled", "a transient failure fails the invocation")
	require.NotErrorIs(t, err, relay.ErrNoRoute, "an unroutable row does not: retrying cannot help")
	require.Equal(t, 5, res.Stale)
	require.Equal(t, 1, res.Unroutable)
	require.Equal(t, 1, res.Failed)
	require.Equal(t, 3, res.Republished, "the rows after a failure are still republished")
	require.Equal(t, []string{evs[1].EventID}, s.pendingIDs())
	require.Equal(t, 1.0, s.gauge(relay.MetricUnroutable))
	require.Equal(t, 1.0, s.gauge(relay.MetricSweepFailed))
}

func TestSweepStopsWhenTheBrokerLooksDown(t *testing.T) {
	t.Parallel()
	s := newSweepSetup(t)
	rows := s.enroll(10, time.Second)
	for _, r := range rows {
		s.pub.fail(r.EventID, errors.New("connection refused"))
	}
	s.setNow(t0.Add(time.Hour))

	res, err := s.sweeper(relay.SweeperConfig{MaxConsecutiveFailures: 3}).Sweep(s.ctx, "run-1")
	require.ErrorContains(t, err, "connection refused")
	require.Equal(t, 3, res.Failed)
	require.Equal(t, 7, res.NotAttempted)
	require.Len(t, s.pub.attempted(), 3)
	require.Len(t, s.pendingIDs(), 10, "nothing is lost or deleted")
}

// shortLeases grants leases that expire sooner than asked, like a lease whose
// time is nearly used up.
type shortLeases struct {
	lease.Store
	ttl time.Duration
}

func (l shortLeases) Acquire(ctx context.Context, name, owner string, now time.Time, _ time.Duration) (lease.Lease, error) {
	return l.Store.Acquire(ctx, name, owner, now, l.ttl)
}

func TestSweepStopsBeforeTheLeaseExpires(t *testing.T) {
	t.Parallel()
	s := newSweepSetup(t)
	s.enroll(3, time.Second)
	s.setNow(t0.Add(time.Hour))
	// 1 s of lease left, and the sweeper stops 5 s before expiry.
	sw := s.sweeper(relay.SweeperConfig{Leases: shortLeases{s.store.Leases, time.Second}})

	res, err := sw.Sweep(s.ctx, "run-1")
	require.NoError(t, err)
	require.Equal(t, 3, res.Stale)
	require.Zero(t, res.Republished)
	require.Equal(t, 3, res.NotAttempted)
	require.Empty(t, s.pub.attempted())
	_, err = s.store.Leases.Acquire(s.ctx, relay.DefaultLeaseName, "next", s.clock(), time.Second)
	require.NoError(t, err, "the lease was released")
}

func TestNewSweeperValidates(t *testing.T) {
	t.Parallel()
	_, err := relay.NewSweeper(relay.SweeperConfig{LeaseTTL: time.Second, StopBefore: 2 * time.Second})
	for _, want := range []string{"Relay is required", "Outbox is required", "Leases is required", "SweepAfter must be positive", "StopBefore"} {
		require.ErrorContains(t, err, want)
	}
}
