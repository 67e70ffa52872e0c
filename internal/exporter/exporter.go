package exporter

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/operation"
	"github.com/clubdev/club/internal/club/projection"
	"github.com/clubdev/club/internal/emf"
	"github.com/clubdev/club/internal/fault"
	"github.com/clubdev/club/internal/obs"
)

// functionName labels metrics.
const functionName = "exporter"

// Files stores export files and hands out URLs to them; *Bucket implements
// it on S3.
type Files interface {
	// Put writes body at key, replacing what is there.
	Put(ctx context.Context, key string, body []byte, contentType, fileName string) error
	// URL returns an absolute URL that fetches key without other credentials
	// for ttl from now, counted in whole seconds from the start of the
	// current second at the latest.
	URL(ctx context.Context, key string, ttl time.Duration) (string, error)
}

// ClassFinder reads classes; class.Repository satisfies it.
type ClassFinder interface {
	Get(ctx context.Context, id string) (class.Class, error)
}

// RosterReader reads a class's roster projection; projection.Reader
// satisfies it.
type RosterReader interface {
	Roster(ctx context.Context, classID string) (projection.Roster, error)
}

// TeacherClasses reads a teacher's classes with their counters, a page
// (at most limit) at a time, in start order; *store.Projections implements
// it. cursor is "" for the first page, and the next cursor is "" after the
// last.
type TeacherClasses interface {
	TeacherClasses(ctx context.Context, teacherID, cursor string, limit int) ([]projection.ClassSummary, string, error)
}

// reportPageSize is how many classes the report reads at a time.
const reportPageSize = 50

// ObjectKey is where the file of an operation is stored: derived from the
// operation id alone, so every attempt writes the same object.
func ObjectKey(operationID string) string { return "exports/" + operationID + ".csv" }

// Metric names of the exporter (namespace obs.MetricsNamespace).
const (
	// MetricExportLatency is from the request (the job's occurred_at) to the
	// result being recorded.
	MetricExportLatency = "ExportLatency"
	MetricExportsDone   = "ExportsSucceeded"
	MetricExportsFailed = "ExportsFailed"
)

// DefaultURLExpiry is how long a result URL works unless configured.
const DefaultURLExpiry = time.Hour

// Deps are the Exporter's collaborators and settings.
type Deps struct {
	Operations operation.Store
	Classes    ClassFinder
	Rosters    RosterReader
	Teachers   TeacherClasses
	Files      Files
	// URLExpiry is how long a result URL works (default DefaultURLExpiry).
	URLExpiry time.Duration
	// Logger receives one line per finished or abandoned export (nil means
	// slog.Default()).
	Logger *slog.Logger
	// Metrics receives Embedded Metric Format lines (nil means io.Discard).
	Metrics io.Writer
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Exporter runs export jobs. It holds no state and is safe for concurrent
// use; two workers on one job meet on the operation's conditional writes.
type Exporter struct {
	ops      operation.Store
	classes  ClassFinder
	rosters  RosterReader
	teachers TeacherClasses
	files    Files
	expiry   time.Duration
	log      *slog.Logger
	metrics  io.Writer
	now      func() time.Time
}

// New checks d and returns an Exporter.
func New(d Deps) (*Exporter, error) {
	var errs []error
	if d.Operations == nil {
		errs = append(errs, errors.New("exporter: Operations is required"))
	}
	if d.Classes == nil {
		errs = append(errs, errors.New("exporter: Classes is required"))
	}
	if d.Rosters == nil {
		errs = append(errs, errors.New("exporter: Rosters is required"))
	}
	if d.Teachers == nil {
		errs = append(errs, errors.New("exporter: Teachers is required"))
	}
	if d.Files == nil {
		errs = append(errs, errors.New("exporter: Files is required"))
	}
	if d.URLExpiry < 0 {
		errs = append(errs, errors.New("exporter: URLExpiry must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	e := &Exporter{
		ops: d.Operations, classes: d.Classes, rosters: d.Rosters, teachers: d.Teachers, files: d.Files,
		expiry: d.URLExpiry, log: d.Logger, metrics: d.Metrics, now: d.Now,
	}
	if e.expiry == 0 {
		e.expiry = DefaultURLExpiry
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.metrics == nil {
		e.metrics = io.Discard
	}
	if e.now == nil {
		e.now = time.Now
	}
	return e, nil
}

// Export runs one export.requested job; other types are an error
// (events.ErrWrongType: the queue carries exports only). The steps, each
// recorded on the operation:
//
//  1. mark it running; already finished → done, nothing changes;
//  2. build the file the operation's kind asks for: a roster export reads
//     the class (gone → failed class_not_found, done) and its roster; a
//     teacher report reads the creator's classes with their counters, a
//     page at a time;
//  3. write the CSV file at ObjectKey and presign a GET URL;
//  4. mark it succeeded with the URL, the row count and the URL's expiry.
//
// A failure in 1–4 is returned as it is (transient, for the caller to
// retry), except on the last attempt: then the operation is marked failed
// with retries_exhausted and the error, and the error is returned for the
// dead-letter queue. operation.ErrNotFound (no such operation) is returned
// for the caller to dead-letter.
func (e *Exporter) Export(ctx context.Context, env events.Envelope, lastAttempt bool) error {
	job, err := env.ExportRequested()
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	ctx = obs.WithAttrs(ctx, obs.OperationID(job.OperationID))
	if job.ClassID != "" {
		ctx = obs.WithAttrs(ctx, obs.ClassID(job.ClassID))
	}
	op, err := e.ops.Update(ctx, job.OperationID, func(o *operation.Operation) error { return o.Start(e.now()) })
	switch {
	case errors.Is(err, operation.ErrFinished):
		e.log.InfoContext(ctx, "export already finished; nothing to do")
		return nil
	case errors.Is(err, operation.ErrNotFound):
		return fmt.Errorf("export: %w", err)
	case err != nil:
		return e.retryLater(ctx, job.OperationID, lastAttempt, fmt.Errorf("export %s: start: %w", job.OperationID, err))
	}

	// The operation row is the record of what was asked for.
	f, failure, err := e.build(ctx, op)
	switch {
	case failure != nil:
		return e.fail(ctx, op.ID(), *failure, nil)
	case err != nil:
		return e.retryLater(ctx, op.ID(), lastAttempt, fmt.Errorf("export %s: %w", op.ID(), err))
	}
	res, err := e.write(ctx, op, f)
	if err != nil {
		return e.retryLater(ctx, op.ID(), lastAttempt, fmt.Errorf("export %s: %w", op.ID(), err))
	}
	_, err = e.ops.Update(ctx, op.ID(), func(o *operation.Operation) error { return o.Succeed(res, e.now()) })
	switch {
	case errors.Is(err, operation.ErrFinished):
		// A concurrent delivery of the same job finished first; its result
		// names the same object.
		e.log.InfoContext(ctx, "export finished by another delivery; nothing to record")
		return nil
	case err != nil:
		return e.retryLater(ctx, op.ID(), lastAttempt, fmt.Errorf("export %s: record result: %w", op.ID(), err))
	}
	now := e.now()
	latency := now.Sub(env.OccurredAt)
	e.log.InfoContext(ctx, "export succeeded", slog.Int("rows", res.Rows), slog.String("object_key", res.ObjectKey),
		slog.Time("expires_at", res.ExpiresAt), slog.Duration("latency", latency))
	e.emit(ctx, now, op.ID(), emf.Durations(MetricExportLatency, latency), emf.Counter(MetricExportsDone, 1))
	return nil
}

// file is an export's content before it is stored.
type file struct {
	body []byte
	rows int    // data rows, the header excluded
	name string // what a browser saves it as
}

// build makes the file of the operation's kind. A failure is permanent (the
// operation fails with it); an error is transient.
func (e *Exporter) build(ctx context.Context, op operation.Operation) (file, *operation.Failure, error) {
	switch op.Kind() {
	case operation.KindRosterExport:
		return e.rosterFile(ctx, op)
	case operation.KindTeacherReport:
		f, err := e.reportFile(ctx, op)
		return f, nil, err
	default:
		return file{}, &operation.Failure{
			Code: operation.FailureMalformedJob, Message: "this exporter does not build " + string(op.Kind()) + " files",
		}, nil
	}
}

// rosterFile is the class's roster, one row per student.
func (e *Exporter) rosterFile(ctx context.Context, op operation.Operation) (file, *operation.Failure, error) {
	if _, err := e.classes.Get(ctx, op.ClassID()); errors.Is(err, club.ErrClassNotFound) {
		return file{}, &operation.Failure{
			Code: operation.FailureClassNotFound, Message: "class " + op.ClassID() + " no longer exists",
		}, nil
	} else if err != nil {
		return file{}, nil, fmt.Errorf("read class: %w", err)
	}
	roster, err := e.rosters.Roster(ctx, op.ClassID())
	if err != nil {
		return file{}, nil, fmt.Errorf("read roster: %w", err)
	}
	body, err := rosterCSV(roster)
	if err != nil {
		return file{}, nil, err
	}
	return file{body: body, rows: len(roster.Students), name: "roster-" + op.ClassID() + ".csv"}, nil, nil
}

// reportFile is the teacher's report: one row per class of the operation's
// creator, in start order, read reportPageSize classes at a time. A teacher
// with no class left gets a file with the header only.
func (e *Exporter) reportFile(ctx context.Context, op operation.Operation) (file, error) {
	w := newCSV("class_id", "title", "starts_at", "seats_taken", "capacity", "enrollments_total", "cancellations_total")
	rows, cursor := 0, ""
	for {
		page, next, err := e.teachers.TeacherClasses(ctx, op.CreatedBy(), cursor, reportPageSize)
		if err != nil {
			return file{}, fmt.Errorf("read classes: %w", err)
		}
		for _, c := range page {
			w.row(cell(c.ClassID), cell(c.Title), c.StartsAt.UTC().Format(time.RFC3339),
				strconv.Itoa(c.SeatsTaken), strconv.Itoa(c.Capacity),
				strconv.FormatInt(c.Stats.EnrollmentsTotal, 10), strconv.FormatInt(c.Stats.CancellationsTotal, 10))
			rows++
		}
		if next == "" {
			break
		}
		cursor = next
	}
	body, err := w.bytes()
	if err != nil {
		return file{}, err
	}
	return file{body: body, rows: rows, name: "teacher-report-" + op.CreatedAt().UTC().Format(time.DateOnly) + ".csv"}, nil
}

// write stores the file and returns the result that names it.
func (e *Exporter) write(ctx context.Context, op operation.Operation, f file) (operation.Result, error) {
	key := ObjectKey(op.ID())
	if err := fault.Inject(ctx, fault.ExporterBeforePut, op.ID()); err != nil {
		return operation.Result{}, fmt.Errorf("write %s: %w", key, err)
	}
	if err := e.files.Put(ctx, key, f.body, "text/csv; charset=utf-8", f.name); err != nil {
		return operation.Result{}, fmt.Errorf("write %s: %w", key, err)
	}
	// The URL's signing time is at or after this second: it works at least
	// until expires_at.
	signedFrom := e.now().UTC().Truncate(time.Second)
	url, err := e.files.URL(ctx, key, e.expiry)
	if err != nil {
		return operation.Result{}, fmt.Errorf("presign %s: %w", key, err)
	}
	return operation.Result{URL: url, Rows: f.rows, ExpiresAt: signedFrom.Add(e.expiry), ObjectKey: key}, nil
}

// Reject records that a job naming an operation could not be read (a
// malformed job, cause): the operation fails with malformed_job, if it
// exists and has not finished. The caller dead-letters the job itself. The
// error is non-nil only if the failure could not be recorded.
func (e *Exporter) Reject(ctx context.Context, operationID string, cause error) error {
	ctx = obs.WithAttrs(ctx, obs.OperationID(operationID))
	err := e.fail(ctx, operationID, operation.Failure{Code: operation.FailureMalformedJob, Message: "the export job could not be read: " + reason(cause)}, nil)
	if errors.Is(err, operation.ErrNotFound) {
		return nil
	}
	return err
}

// retryLater returns a transient cause; on the last attempt the operation is
// marked failed first, because the job is about to reach the dead-letter
// queue.
func (e *Exporter) retryLater(ctx context.Context, operationID string, lastAttempt bool, cause error) error {
	if !lastAttempt {
		return cause
	}
	return e.fail(ctx, operationID, operation.Failure{
		Code: operation.FailureRetriesExhausted, Message: "every attempt failed; the last error: " + reason(cause),
	}, cause)
}

// fail marks the operation failed and returns cause (nil: the job is done).
// If the failure cannot be recorded, the result is a transient error
// instead, so that the job is delivered again and it is recorded then. An
// operation that has already finished keeps its outcome, and the job is
// done.
func (e *Exporter) fail(ctx context.Context, operationID string, f operation.Failure, cause error) error {
	_, err := e.ops.Update(ctx, operationID, func(o *operation.Operation) error { return o.Fail(f, e.now()) })
	switch {
	case errors.Is(err, operation.ErrFinished):
		e.log.InfoContext(ctx, "export already finished; its outcome stands", slog.String("failure_code", f.Code), obs.Err(cause))
		return nil
	case err != nil:
		return errors.Join(cause, fmt.Errorf("export %s: record failure %s: %w", operationID, f.Code, err))
	}
	now := e.now()
	e.log.WarnContext(ctx, "export failed", slog.String("failure_code", f.Code), slog.String("failure", f.Message))
	e.emit(ctx, now, operationID, emf.Counter(MetricExportsFailed, 1))
	return cause
}

func (e *Exporter) emit(ctx context.Context, now time.Time, operationID string, metrics ...emf.Metric) {
	err := emf.Entry{
		Namespace:  obs.MetricsNamespace,
		Dimensions: map[string]string{obs.DimFunction: functionName},
		Metrics:    metrics,
		Properties: map[string]any{obs.KeyOperationID: operationID},
		Timestamp:  now,
	}.Emit(e.metrics)
	if err != nil {
		e.log.WarnContext(ctx, "could not emit metrics", obs.Err(err))
	}
}

// maxReasonBytes bounds the failure message shown to the operation's
// creator.
const maxReasonBytes = 512

// reason is an error's text for people: without addresses, bounded.
func reason(err error) string {
	s := obs.RedactText(err.Error())
	if len(s) > maxReasonBytes {
		s = s[:maxReasonBytes-3] + "..."
	}
	return s
}

// rosterCSV is the file: a header, then one row per student in roster
// order.
func rosterCSV(r projection.Roster) ([]byte, error) {
	w := newCSV("student_id", "enrolled_at")
	for _, s := range r.Students {
		w.row(cell(s.StudentID), s.EnrolledAt.UTC().Format(time.RFC3339Nano))
	}
	return w.bytes()
}

// csvFile builds a CSV file in memory, a header and then rows.
type csvFile struct {
	buf bytes.Buffer
	w   *csv.Writer
}

func newCSV(header ...string) *csvFile {
	f := &csvFile{}
	f.w = csv.NewWriter(&f.buf)
	f.row(header...)
	return f
}

// row adds a row; a write error (none happens on a bytes.Buffer) is kept
// for bytes to report.
func (f *csvFile) row(cells ...string) { _ = f.w.Write(cells) }

func (f *csvFile) bytes() ([]byte, error) {
	f.w.Flush()
	if err := f.w.Error(); err != nil {
		return nil, fmt.Errorf("write CSV: %w", err)
	}
	return f.buf.Bytes(), nil
}

// cell keeps a value that a spreadsheet would run as a formula (one that
// starts with =, +, -, @, a tab or a carriage return) as text, by prefixing
// a quote: ids come from identity providers, not from us.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
