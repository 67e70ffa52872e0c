package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/outbox"
	"github.com/clubdev/club/internal/emf"
	"github.com/clubdev/club/internal/fault"
	"github.com/clubdev/club/internal/obs"
)

// MetricPublishLag is the outbox publish lag: publish time − the row's
// created_at, one sample per published row (docs/principles.md §2).
const MetricPublishLag = "OutboxPublishLag"

// DefaultMarkConcurrency bounds the concurrent MarkPublished calls of one
// Publish.
const DefaultMarkConcurrency = 8

// Marker is the part of outbox.Store the relay needs.
type Marker interface {
	MarkPublished(ctx context.Context, eventID string, at time.Time) error
}

// Config are a Relay's collaborators and settings.
type Config struct {
	// Routes says which publisher carries each kind (required; may be
	// empty, in which case every row fails with ErrNoRoute).
	Routes Routes
	// Outbox marks rows published (required).
	Outbox Marker
	// Logger defaults to a logger that discards everything.
	Logger *slog.Logger
	// Metrics receives Embedded Metric Format lines (default io.Discard),
	// under obs.MetricsNamespace with MetricDimensions.
	Metrics          io.Writer
	MetricDimensions map[string]string
	// Now defaults to time.Now.
	Now func() time.Time
	// MarkConcurrency defaults to DefaultMarkConcurrency.
	MarkConcurrency int
}

// Relay publishes outbox rows and marks them published.
type Relay struct {
	routes          Routes
	outbox          Marker
	logger          *slog.Logger
	metrics         io.Writer
	dims            map[string]string
	now             func() time.Time
	markConcurrency int
}

// New checks cfg and returns a Relay.
func New(cfg Config) (*Relay, error) {
	var errs []error
	if cfg.Routes == nil {
		errs = append(errs, errors.New("relay: Routes is required"))
	}
	if cfg.Outbox == nil {
		errs = append(errs, errors.New("relay: Outbox is required"))
	}
	if cfg.MarkConcurrency < 0 {
		errs = append(errs, errors.New("relay: MarkConcurrency must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r := &Relay{
		routes: maps.Clone(cfg.Routes), outbox: cfg.Outbox, logger: cfg.Logger,
		metrics: cfg.Metrics, dims: maps.Clone(cfg.MetricDimensions), now: cfg.Now,
		markConcurrency: cfg.MarkConcurrency,
	}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	if r.metrics == nil {
		r.metrics = io.Discard
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.markConcurrency == 0 {
		r.markConcurrency = DefaultMarkConcurrency
	}
	return r, nil
}

// Publish publishes rows in order and marks each published row. It returns
// how many rows, from the start, are published and marked: n < len(rows)
// exactly when err is not nil, and then err says why rows[n] is not
// (errors.Is(err, ErrNoRoute) for a row nobody can carry). Rows after rows[n]
// may already be published, and marked, if they went to the publisher in the
// same call; a retry from rows[n] publishes them again, which is harmless.
//
// Consecutive rows of the same kind go to their publisher in one call, so a
// batching publisher can fill its batches. The same row may be published
// again by a later call (a retry, the sweeper): it keeps its event_id.
func (r *Relay) Publish(ctx context.Context, rows []outbox.Row) (int, error) {
	for start := 0; start < len(rows); {
		kind, pub, err := r.routes.route(rows[start].Type)
		if err != nil {
			return start, fmt.Errorf("event %s: %w", rows[start].EventID, err)
		}
		end := start + 1
		for end < len(rows) {
			if k, _, err := r.routes.route(rows[end].Type); err != nil || k != kind {
				break
			}
			end++
		}
		group := rows[start:end]
		msgs := make([]Message, len(group))
		for i, row := range group {
			msgs[i] = MessageOf(row)
		}

		// Fault points (package fault) are keyed by the group's first event.
		if err := fault.Inject(ctx, fault.RelayBeforePublish, group[0].EventID); err != nil {
			return start, err
		}
		sent, pubErr := pub.Publish(ctx, msgs)
		if sent < 0 || sent > len(group) || (sent < len(group)) != (pubErr != nil) {
			// A publisher breaking its contract must not make rows look
			// published that were not.
			return start, fmt.Errorf("relay: publisher for kind %s reported %d of %d messages sent (error: %v)", kind, sent, len(group), pubErr)
		}
		if err := fault.Inject(ctx, fault.RelayAfterPublish, group[0].EventID); err != nil {
			return start, err
		}
		at := r.now()
		r.emitLag(group[:sent], at)
		marked, markErr := r.markAll(ctx, group[:sent], at)
		if markErr != nil {
			return start + marked, markErr
		}
		if pubErr != nil {
			return start + sent, pubErr
		}
		if err := fault.Inject(ctx, fault.RelayAfterMark, group[0].EventID); err != nil {
			// Done, but reported as failed: the caller repeats the group.
			return start, err
		}
		start = end
	}
	return len(rows), nil
}

// BatchMarker is implemented by outbox stores that can mark many rows
// published in few requests. MarkAllPublished is given the rows as they
// were published (a store may write them whole) and marks every row or, on
// any error, may have marked some of them: marking is idempotent, so the
// relay then marks them one by one.
type BatchMarker interface {
	MarkAllPublished(ctx context.Context, rows []outbox.Row, at time.Time) error
}

// markAll marks rows published — all at once when the outbox is a
// BatchMarker, else (or if that fails) concurrently one by one — and returns
// how many rows from the start are marked and the first error in row order.
func (r *Relay) markAll(ctx context.Context, rows []outbox.Row, at time.Time) (int, error) {
	if bm, ok := r.outbox.(BatchMarker); ok && len(rows) > 1 {
		err := bm.MarkAllPublished(ctx, rows, at)
		if err == nil {
			return len(rows), nil
		}
		r.logger.DebugContext(ctx, "marking the batch published failed; marking row by row", obs.Err(err))
	}
	errs := make([]error, len(rows))
	sem := make(chan struct{}, r.markConcurrency)
	var wg sync.WaitGroup
	for i, row := range rows {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = r.mark(ctx, row, at)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return i, err
		}
	}
	return len(rows), nil
}

func (r *Relay) mark(ctx context.Context, row outbox.Row, at time.Time) error {
	err := r.outbox.MarkPublished(ctx, row.EventID, at)
	if errors.Is(err, club.ErrNotFound) {
		// Only published rows expire (TTL) and nothing else deletes rows, so
		// a missing row was published before: there is nothing left to mark.
		r.logger.WarnContext(ctx, "outbox row to mark published no longer exists",
			obs.EventID(row.EventID), obs.EventType(string(row.Type)))
		return nil
	}
	if err != nil {
		return fmt.Errorf("event %s published but not marked: %w", row.EventID, err)
	}
	return nil
}

func (r *Relay) emitLag(rows []outbox.Row, at time.Time) {
	if len(rows) == 0 {
		return
	}
	lags := make([]time.Duration, len(rows))
	for i, row := range rows {
		lags[i] = max(at.Sub(row.CreatedAt), 0)
	}
	err := emf.Entry{
		Namespace: obs.MetricsNamespace, Dimensions: r.dims,
		Metrics: []emf.Metric{emf.Durations(MetricPublishLag, lags...)}, Timestamp: at,
	}.Emit(r.metrics)
	if err != nil {
		// Metrics are not worth failing a publish for.
		r.logger.Warn("emit publish lag metric", obs.Err(err))
	}
}
