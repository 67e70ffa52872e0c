package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"time"

	"github.com/clubdev/club/internal/club/lease"
	"github.com/clubdev/club/internal/club/outbox"
	"github.com/clubdev/club/internal/emf"
	"github.com/clubdev/club/internal/obs"
)

// Sweeper defaults.
const (
	DefaultLeaseName = "outbox-sweeper"
	// DefaultLeaseTTL is below the one-minute schedule, so that the lease of
	// a sweeper that died lapses before the next run.
	DefaultLeaseTTL = 50 * time.Second
	// DefaultSweepLimit bounds the rows republished per run.
	DefaultSweepLimit = 500
	// DefaultMaxConsecutiveFailures ends a run early when the broker looks
	// down: the next run tries again.
	DefaultMaxConsecutiveFailures = 5
)

// Sweeper metrics (docs/principles.md §1.14: the age of the oldest unpublished row is a
// promise not kept yet).
const (
	MetricOldestUnpublishedAge = "OutboxOldestUnpublishedAge"
	// MetricStaleUnpublished counts the rows a sweep found unpublished past
	// the threshold (at most its limit): the outbox's backlog, for the
	// operations dashboard.
	MetricStaleUnpublished = "OutboxStaleUnpublished"
	MetricRepublished      = "OutboxRepublished"
	MetricSweepFailed      = "OutboxSweepFailed"
	MetricUnroutable       = "OutboxUnroutable"
)

// sweepChunk is how many rows one Relay.Publish call gets; the sweeper checks
// its deadline between chunks.
const sweepChunk = 25

// PendingLister is the part of outbox.Store the sweeper needs.
type PendingLister interface {
	Unpublished(ctx context.Context, createdBefore time.Time, limit int) ([]outbox.Row, error)
}

// SweeperConfig are a Sweeper's collaborators and settings.
type SweeperConfig struct {
	Relay  *Relay        // required
	Outbox PendingLister // required
	Leases lease.Store   // required
	// SweepAfter is how long a row may stay pending before the sweeper
	// republishes it (required, positive). Keep it well above the stream
	// relay's normal delay, or the sweeper duplicates its work.
	SweepAfter time.Duration
	// Limit bounds the rows republished per run (default DefaultSweepLimit).
	Limit int
	// LeaseName and LeaseTTL default to DefaultLeaseName and DefaultLeaseTTL.
	// The TTL must be shorter than the schedule period.
	LeaseName string
	LeaseTTL  time.Duration
	// StopBefore is how long before the lease expires the sweeper stops
	// starting new work (default a tenth of LeaseTTL).
	StopBefore time.Duration
	// MaxConsecutiveFailures ends a run after this many rows in a row failed
	// for a reason other than ErrNoRoute (default
	// DefaultMaxConsecutiveFailures).
	MaxConsecutiveFailures int
	// Logger, Metrics, MetricDimensions and Now as in Config.
	Logger           *slog.Logger
	Metrics          io.Writer
	MetricDimensions map[string]string
	Now              func() time.Time
}

// Sweeper republishes outbox rows left pending past a threshold.
type Sweeper struct {
	cfg SweeperConfig
}

// NewSweeper checks cfg and returns a Sweeper.
func NewSweeper(cfg SweeperConfig) (*Sweeper, error) {
	if cfg.Limit == 0 {
		cfg.Limit = DefaultSweepLimit
	}
	if cfg.LeaseName == "" {
		cfg.LeaseName = DefaultLeaseName
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.StopBefore == 0 {
		cfg.StopBefore = cfg.LeaseTTL / 10
	}
	if cfg.MaxConsecutiveFailures == 0 {
		cfg.MaxConsecutiveFailures = DefaultMaxConsecutiveFailures
	}
	var errs []error
	if cfg.Relay == nil {
		errs = append(errs, errors.New("sweeper: Relay is required"))
	}
	if cfg.Outbox == nil {
		errs = append(errs, errors.New("sweeper: Outbox is required"))
	}
	if cfg.Leases == nil {
		errs = append(errs, errors.New("sweeper: Leases is required"))
	}
	if cfg.SweepAfter <= 0 {
		errs = append(errs, errors.New("sweeper: SweepAfter must be positive"))
	}
	if cfg.Limit < 0 {
		errs = append(errs, errors.New("sweeper: Limit must be positive"))
	}
	if cfg.LeaseTTL < 0 {
		errs = append(errs, errors.New("sweeper: LeaseTTL must be positive"))
	}
	if cfg.StopBefore < 0 || cfg.StopBefore >= cfg.LeaseTTL {
		errs = append(errs, errors.New("sweeper: StopBefore must be positive and shorter than LeaseTTL"))
	}
	if cfg.MaxConsecutiveFailures < 0 {
		errs = append(errs, errors.New("sweeper: MaxConsecutiveFailures must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = io.Discard
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.MetricDimensions = maps.Clone(cfg.MetricDimensions)
	return &Sweeper{cfg: cfg}, nil
}

// SweepResult says what one run did.
type SweepResult struct {
	// Owner is the lease owner the run used.
	Owner string
	// LeaseHeld is true when another owner held the lease: the run did
	// nothing else.
	LeaseHeld bool
	// Stale is how many rows pending past the threshold were listed (at
	// most the limit); LimitReached says there may be more.
	Stale        int
	LimitReached bool
	// Republished rows were published and marked.
	Republished int
	// Unroutable rows have no route (ErrNoRoute); they stay pending.
	Unroutable int
	// Failed rows could not be published or marked for another reason; the
	// next run retries them.
	Failed int
	// NotAttempted rows were left for the next run because the lease was
	// about to expire or the broker looked down.
	NotAttempted int
	// OldestUnpublishedAge is the age of the oldest pending row when the run
	// started, whether or not it was past the threshold; zero when nothing
	// was pending.
	OldestUnpublishedAge time.Duration
}

// Sweep runs once as owner (use something unique per run, such as the Lambda
// request id; a retried invocation reusing it renews its own lease). If
// another owner holds the lease it returns a result with LeaseHeld and a nil
// error. Rows that fail with ErrNoRoute are counted and logged, not returned
// as an error (retrying cannot help); any other failure makes the run return
// an error after it has tried every row, so that the invocation is recorded
// as failed.
//
// Under the lease, rows are republished oldest first and at most Limit per
// run; work stops StopBefore the lease expires. The lease is released at the
// end. Two overlapping sweepers are harmless anyway: a lease does not prove
// the previous owner stopped, and republishing keeps the event_id.
func (s *Sweeper) Sweep(ctx context.Context, owner string) (SweepResult, error) {
	cfg := s.cfg
	res := SweepResult{Owner: owner}
	now := cfg.Now()
	l, err := cfg.Leases.Acquire(ctx, cfg.LeaseName, owner, now, cfg.LeaseTTL)
	if errors.Is(err, lease.ErrHeld) {
		res.LeaseHeld = true
		cfg.Logger.InfoContext(ctx, "outbox sweep skipped: another sweeper holds the lease", slog.String("lease", cfg.LeaseName))
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("sweep: acquire lease: %w", err)
	}
	defer s.release(ctx, owner)

	// Work only while the lease is ours. The budget is measured on the
	// clock that dated the lease, then applied to this context.
	work, cancel := context.WithTimeout(ctx, l.ExpiresAt.Sub(now)-cfg.StopBefore)
	defer cancel()

	rows, err := cfg.Outbox.Unpublished(work, now.Add(-cfg.SweepAfter), cfg.Limit)
	if err != nil {
		return res, fmt.Errorf("sweep: list stale outbox rows: %w", err)
	}
	res.Stale, res.LimitReached = len(rows), len(rows) == cfg.Limit
	oldest, err := s.oldestPending(work, rows, now)
	if err != nil {
		return res, err
	}
	if !oldest.IsZero() {
		res.OldestUnpublishedAge = max(now.Sub(oldest), 0)
	}

	failures := s.republish(work, rows, &res)
	s.report(ctx, res)
	if len(failures) > 0 {
		// Each failure was logged with its row; this is the run's verdict.
		return res, fmt.Errorf("sweep: %d of %d stale outbox rows not republished, first: %w", len(failures), res.Stale, failures[0])
	}
	return res, nil
}

// oldestPending returns the creation time of the oldest pending row (zero if
// none). The stale rows are sorted oldest first; only when there are none
// does it take one more query to look at rows younger than the threshold.
func (s *Sweeper) oldestPending(ctx context.Context, stale []outbox.Row, now time.Time) (time.Time, error) {
	if len(stale) > 0 {
		return stale[0].CreatedAt, nil
	}
	young, err := s.cfg.Outbox.Unpublished(ctx, now, 1)
	if err != nil {
		return time.Time{}, fmt.Errorf("sweep: find the oldest pending outbox row: %w", err)
	}
	if len(young) == 0 {
		return time.Time{}, nil
	}
	return young[0].CreatedAt, nil
}

// republish publishes rows through the relay in chunks, skipping past rows
// that fail, and returns the failures that are worth an error.
func (s *Sweeper) republish(ctx context.Context, rows []outbox.Row, res *SweepResult) []error {
	cfg := s.cfg
	var failures []error
	consecutive := 0
	for i := 0; i < len(rows); {
		if ctx.Err() != nil || consecutive >= cfg.MaxConsecutiveFailures {
			res.NotAttempted = len(rows) - i
			cfg.Logger.WarnContext(ctx, "outbox sweep stopped early; the next run continues",
				slog.Int("not_attempted", res.NotAttempted), slog.Bool("lease_expiring", ctx.Err() != nil),
				slog.Int("consecutive_failures", consecutive))
			break
		}
		end := min(i+sweepChunk, len(rows))
		n, err := cfg.Relay.Publish(ctx, rows[i:end])
		for _, row := range rows[i : i+n] {
			cfg.Logger.InfoContext(ctx, "republished stale outbox row", obs.EventID(row.EventID),
				obs.EventType(string(row.Type)), seconds("age_seconds", cfg.Now().Sub(row.CreatedAt)))
		}
		res.Republished += n
		if n > 0 {
			consecutive = 0
		}
		i += n
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			continue // the lease is expiring; counted as not attempted above
		}
		row := rows[i]
		attrs := []any{obs.EventID(row.EventID), obs.EventType(string(row.Type)), obs.Err(err)}
		if errors.Is(err, ErrNoRoute) {
			res.Unroutable++
			cfg.Logger.ErrorContext(ctx, "outbox row has no route; it stays pending until one is deployed", attrs...)
		} else {
			res.Failed++
			consecutive++
			failures = append(failures, err)
			cfg.Logger.WarnContext(ctx, "outbox row not republished; the next run retries it", attrs...)
		}
		i++
	}
	return failures
}

func (s *Sweeper) release(ctx context.Context, owner string) {
	// Release even if the invocation's context is done: otherwise the next
	// run waits for the lease to expire.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.cfg.Leases.Release(ctx, s.cfg.LeaseName, owner); err != nil {
		// Not fatal: the lease lapses by itself at its expiry.
		s.cfg.Logger.WarnContext(ctx, "release outbox sweeper lease", slog.String("lease", s.cfg.LeaseName), obs.Err(err))
	}
}

func (s *Sweeper) report(ctx context.Context, res SweepResult) {
	cfg := s.cfg
	cfg.Logger.InfoContext(ctx, "outbox sweep done",
		slog.Int("stale", res.Stale), slog.Bool("limit_reached", res.LimitReached),
		slog.Int("republished", res.Republished), slog.Int("unroutable", res.Unroutable),
		slog.Int("failed", res.Failed), slog.Int("not_attempted", res.NotAttempted),
		seconds("oldest_unpublished_age_seconds", res.OldestUnpublishedAge))
	err := emf.Entry{
		Namespace: obs.MetricsNamespace, Dimensions: cfg.MetricDimensions,
		Metrics: []emf.Metric{
			emf.Durations(MetricOldestUnpublishedAge, res.OldestUnpublishedAge),
			emf.Counter(MetricStaleUnpublished, res.Stale),
			emf.Counter(MetricRepublished, res.Republished),
			emf.Counter(MetricSweepFailed, res.Failed),
			emf.Counter(MetricUnroutable, res.Unroutable),
		},
		Timestamp: cfg.Now(),
	}.Emit(cfg.Metrics)
	if err != nil {
		cfg.Logger.WarnContext(ctx, "emit outbox sweep metrics", obs.Err(err))
	}
}

// seconds logs a duration as seconds, the unit people read ages in (slog's
// JSON handler would write nanoseconds).
func seconds(key string, d time.Duration) slog.Attr { return slog.Float64(key, d.Seconds()) }
