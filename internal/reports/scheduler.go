package reports

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/clubdev/club/internal/emf"
	"github.com/clubdev/club/internal/obs"
)

// functionName labels logs and metrics.
const functionName = "report-scheduler"

// Metric names of the scheduler (namespace obs.MetricsNamespace).
const (
	MetricReportsRequested = "TeacherReportsRequested"
	MetricReportsFailed    = "TeacherReportsFailed"
)

// PageSize is how many index entries (classes) one read of the teachers
// covers.
const PageSize = 100

// Concurrency bounds the operations written at once.
const Concurrency = 4

// Teachers pages through the teachers who have a class; *store.Classes
// implements it. A teacher may be on more than one page.
type Teachers interface {
	Teachers(ctx context.Context, cursor string, limit int) (teacherIDs []string, next string, err error)
}

// Requester asks for one teacher's report of a day; *operation.Service
// implements it. created is false when it was asked for before.
type Requester interface {
	RequestTeacherReport(ctx context.Context, teacherID string, date time.Time) (id string, created bool, err error)
}

// Deps are the Scheduler's collaborators.
type Deps struct {
	Teachers  Teachers
	Requester Requester
	// Logger receives one line per run (nil means slog.Default()).
	Logger *slog.Logger
	// Metrics receives Embedded Metric Format lines (nil means io.Discard).
	Metrics io.Writer
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Scheduler asks for every teacher's report. It holds no state between runs
// and is safe for concurrent use: two runs of one day meet on the
// operations' ids.
type Scheduler struct {
	teachers  Teachers
	requester Requester
	log       *slog.Logger
	metrics   io.Writer
	now       func() time.Time
}

// New checks d and returns a Scheduler.
func New(d Deps) (*Scheduler, error) {
	var errs []error
	if d.Teachers == nil {
		errs = append(errs, errors.New("reports: Teachers is required"))
	}
	if d.Requester == nil {
		errs = append(errs, errors.New("reports: Requester is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s := &Scheduler{teachers: d.Teachers, requester: d.Requester, log: d.Logger, metrics: d.Metrics, now: d.Now}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.metrics == nil {
		s.metrics = io.Discard
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// Result is what one run did; the function returns it to whoever invoked
// it by hand.
type Result struct {
	// Date is the day the reports are for (YYYY-MM-DD, UTC).
	Date string `json:"date"`
	// Teachers is how many teachers with classes the run found.
	Teachers int `json:"teachers"`
	// Requested counts the reports asked for by this run.
	Requested int `json:"requested"`
	// AlreadyRequested counts those asked for before (a second fire).
	AlreadyRequested int `json:"already_requested"`
	// Failed counts the teachers whose report could not be asked for.
	Failed int `json:"failed"`
}

// Run asks for the report of date's UTC day for every teacher with a class,
// page by page. It returns an error if the teachers could not be read to
// the end, or if some reports could not be asked for (the others are
// written; a retry asks for the missing ones only).
func (s *Scheduler) Run(ctx context.Context, date time.Time) (Result, error) {
	res := Result{Date: date.UTC().Format(time.DateOnly)}
	seen := map[string]bool{}
	var firstErr error
	cursor := ""
	for {
		teachers, next, err := s.teachers.Teachers(ctx, cursor, PageSize)
		if err != nil {
			firstErr = fmt.Errorf("read teachers: %w", err)
			break
		}
		var fresh []string
		for _, id := range teachers {
			if !seen[id] {
				seen[id] = true
				fresh = append(fresh, id)
			}
		}
		res.Teachers += len(fresh)
		if err := s.requestAll(ctx, fresh, date, &res); err != nil && firstErr == nil {
			firstErr = err
		}
		if next == "" || ctx.Err() != nil {
			if ctx.Err() != nil && firstErr == nil {
				firstErr = fmt.Errorf("stopped before the last teacher: %w", ctx.Err())
			}
			break
		}
		cursor = next
	}
	s.report(ctx, res, firstErr)
	if firstErr != nil {
		return res, fmt.Errorf("teacher reports of %s: %d asked for, %d failed: %w", res.Date, res.Requested, res.Failed, firstErr)
	}
	return res, nil
}

// requestAll asks for the reports of teachers, Concurrency at a time, and
// returns the first failure.
func (s *Scheduler) requestAll(ctx context.Context, teachers []string, date time.Time, res *Result) error {
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	slots := make(chan struct{}, Concurrency)
	for _, teacher := range teachers {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			id, created, err := s.requester.RequestTeacherReport(ctx, teacher, date)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				res.Failed++
				if firstErr == nil {
					firstErr = err
				}
				s.log.WarnContext(ctx, "teacher report not asked for", slog.String("user_id", teacher), obs.Err(err))
			case created:
				res.Requested++
				s.log.DebugContext(ctx, "teacher report asked for", obs.OperationID(id), slog.String("user_id", teacher))
			default:
				res.AlreadyRequested++
			}
		})
	}
	wg.Wait()
	return firstErr
}

func (s *Scheduler) report(ctx context.Context, res Result, err error) {
	attrs := []slog.Attr{
		slog.String("date", res.Date), slog.Int("teachers", res.Teachers), slog.Int("requested", res.Requested),
		slog.Int("already_requested", res.AlreadyRequested), slog.Int("failed", res.Failed),
	}
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "teacher reports incomplete", append(attrs, obs.Err(err))...)
	} else {
		s.log.LogAttrs(ctx, slog.LevelInfo, "teacher reports asked for", attrs...)
	}
	if werr := (emf.Entry{
		Namespace:  obs.MetricsNamespace,
		Dimensions: map[string]string{obs.DimFunction: functionName},
		Metrics:    []emf.Metric{emf.Counter(MetricReportsRequested, res.Requested), emf.Counter(MetricReportsFailed, res.Failed)},
		Timestamp:  s.now(),
	}).Emit(s.metrics); werr != nil {
		s.log.WarnContext(ctx, "could not emit metrics", obs.Err(werr))
	}
}
