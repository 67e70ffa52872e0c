package esm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/clubdev/club/localcloud/internal/ddbstream"
	"github.com/clubdev/club/localcloud/invoke"
)

// Limits and defaults of DynamoDB stream event source mappings.
const (
	DefaultStreamBatchSize = 100
	MaxStreamBatchSize     = 10000
	// InfiniteRetries as MaximumRetryAttempts retries a failing batch until
	// it succeeds or its records exceed MaximumRecordAge. It is the AWS
	// default: map an absent MaximumRetryAttempts to it.
	InfiniteRetries         = -1
	MaxStreamRetryAttempts  = 10000
	MaxStreamRecordAge      = 7 * 24 * time.Hour
	MaxStreamBatchingWindow = 300 * time.Second

	StartingPositionTrimHorizon = "TRIM_HORIZON"
	StartingPositionLatest      = "LATEST"

	// StreamPollInterval is the shard's polling period: "Lambda polls
	// shards in your DynamoDB stream for records at a base rate of 4 times
	// per second" (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html).
	// A poll that follows a full batch is not held back (a backlog is read
	// as fast as the function takes it).
	StreamPollInterval = 250 * time.Millisecond
)

// StreamMapping is the configuration of one DynamoDB stream event source
// mapping. The zero values of MaximumRetryAttempts and MaximumRecordAge are
// not AWS's defaults: see the fields.
type StreamMapping struct {
	// UUID identifies the mapping (as in the Lambda API); used in logs.
	UUID         string
	FunctionName string
	StreamARN    string
	// ShardID is the shard name written in on-failure records; empty means
	// ddbstream.ShardID, the shard the local Streams API reports.
	ShardID string
	// StartingPosition is TRIM_HORIZON (every record the log holds) or
	// LATEST (records appended after Run starts).
	StartingPosition string
	// BatchSize is the most records per invocation: 1..10000, 0 means 100.
	BatchSize int
	// MaximumBatchingWindow is how long to keep gathering records after the
	// first one before invoking with a batch that is not full.
	MaximumBatchingWindow time.Duration
	// Filters are FilterCriteria patterns (JSON, at most 5); a record is
	// delivered when any matches it. None means every record.
	Filters                    []string
	BisectBatchOnFunctionError bool
	// MaximumRetryAttempts is how often a failing batch is retried:
	// 0..10000, or InfiniteRetries (-1, AWS's default). 0 means no retry.
	MaximumRetryAttempts int
	// MaximumRecordAge discards records older than this before invoking:
	// up to 7 days; 0 means no limit (AWS's -1). AWS's minimum of 60 s is
	// not enforced so that tests can use short ages.
	MaximumRecordAge        time.Duration
	ReportBatchItemFailures bool
	// OnFailure is the ARN of an SQS queue or SNS topic that receives an
	// OnFailureRecord for every discarded batch; empty drops them.
	OnFailure string
	Enabled   bool
	// ResumeAfter, when set, is the checkpoint a persistent local cloud
	// kept from its last run: Run starts reading after it, whatever
	// StartingPosition says (as Lambda's mapping carries on from where it
	// was, not from its starting position, when it is re-enabled).
	ResumeAfter *uint64
	// OnCheckpoint, when set, is called with every new checkpoint, from
	// the poller's goroutine, before it reads on: what it keeps survives a
	// crash of the local cloud right after.
	OnCheckpoint func(seq uint64)
}

func (m *StreamMapping) applyDefaults() {
	if m.BatchSize == 0 {
		m.BatchSize = DefaultStreamBatchSize
	}
	if m.ShardID == "" {
		m.ShardID = ddbstream.ShardID
	}
}

func (m StreamMapping) validate() error {
	var errs []error
	if m.FunctionName == "" {
		errs = append(errs, errors.New("FunctionName is required"))
	}
	if a, err := parseARN(m.StreamARN); err != nil {
		errs = append(errs, fmt.Errorf("StreamARN: %w", err))
	} else if a.Service != "dynamodb" {
		errs = append(errs, fmt.Errorf("StreamARN %q is not a DynamoDB stream ARN", m.StreamARN))
	}
	if m.StartingPosition != StartingPositionTrimHorizon && m.StartingPosition != StartingPositionLatest {
		errs = append(errs, fmt.Errorf("StartingPosition %q is not %s or %s", m.StartingPosition, StartingPositionTrimHorizon, StartingPositionLatest))
	}
	if m.BatchSize < 1 || m.BatchSize > MaxStreamBatchSize {
		errs = append(errs, fmt.Errorf("BatchSize %d is outside 1..%d", m.BatchSize, MaxStreamBatchSize))
	}
	if m.MaximumBatchingWindow < 0 || m.MaximumBatchingWindow > MaxStreamBatchingWindow {
		errs = append(errs, fmt.Errorf("MaximumBatchingWindow %s is outside 0..%s", m.MaximumBatchingWindow, MaxStreamBatchingWindow))
	}
	if m.MaximumRetryAttempts < InfiniteRetries || m.MaximumRetryAttempts > MaxStreamRetryAttempts {
		errs = append(errs, fmt.Errorf("MaximumRetryAttempts %d is outside -1..%d", m.MaximumRetryAttempts, MaxStreamRetryAttempts))
	}
	if m.MaximumRecordAge < 0 || m.MaximumRecordAge > MaxStreamRecordAge {
		errs = append(errs, fmt.Errorf("MaximumRecordAge %s is outside 0..%s", m.MaximumRecordAge, MaxStreamRecordAge))
	}
	if m.OnFailure != "" {
		if a, err := parseARN(m.OnFailure); err != nil {
			errs = append(errs, fmt.Errorf("OnFailure: %w", err))
		} else if a.Service != "sqs" && a.Service != "sns" {
			errs = append(errs, fmt.Errorf("OnFailure %q is neither an SQS queue nor an SNS topic", m.OnFailure))
		}
	}
	return errors.Join(errs...)
}

// StreamStats counts what a stream poller did since it started.
type StreamStats struct {
	Batches         int64 // invocations
	Records         int64 // records passed to the function, retries included
	Succeeded       int64 // records finished by a successful invocation
	Filtered        int64 // records skipped because no filter matched
	Discarded       int64 // records given up on (sent to OnFailure or dropped)
	FunctionErrors  int64 // invocations that failed the whole batch
	PartialFailures int64 // invocations that reported some records as failed
	InvokeErrors    int64 // invocations that could not be made
	Retries         int64 // re-invocations of a failed (sub-)batch
	Bisects         int64 // failed batches split in two
	// EmptyPolls counts polls that found no record to deliver and waited
	// for a write and the next poll.
	EmptyPolls int64
	// Checkpoint is the sequence number up to which every record is
	// finished; see StreamPoller.Checkpoint.
	Checkpoint uint64
}

// StreamPoller runs one DynamoDB stream event source mapping.
type StreamPoller struct {
	cfg         StreamMapping
	records     *ddbstream.Log
	invoker     invoke.Invoker
	destination DestinationSender
	logger      *slog.Logger
	filters     filterSet
	// filtersReadChange is whether a filter names the "dynamodb" field.
	filtersReadChange bool
	functionARN       string
	backoff           backoff
	now               func() time.Time

	readPos    uint64 // the last sequence number read; owned by Run
	checkpoint atomic.Uint64
	// pollInterval is StreamPollInterval; lastPoll is when the current
	// batch's first read was made and lastFull whether that batch was
	// full. Owned by Run.
	pollInterval time.Duration
	lastPoll     time.Time
	lastFull     bool

	mu    sync.Mutex // guards stats
	stats StreamStats
}

// NewStreamPoller validates the mapping (after applying defaults), compiles
// its filters and returns a poller for it. destination may be nil when the
// mapping has no OnFailure. A nil logger means slog.Default().
func NewStreamPoller(m StreamMapping, records *ddbstream.Log, invoker invoke.Invoker, destination DestinationSender, logger *slog.Logger) (*StreamPoller, error) {
	m.applyDefaults()
	err := m.validate()
	filters, ferr := compileFilters(m.Filters)
	if ferr != nil {
		err = errors.Join(err, fmt.Errorf("Filters: %w", ferr))
	}
	if m.OnFailure != "" && destination == nil {
		err = errors.Join(err, errors.New("OnFailure is set but no destination sender was given"))
	}
	if err != nil {
		return nil, fmt.Errorf("stream event source mapping %s: %w", m.UUID, err)
	}
	if logger == nil {
		logger = slog.Default()
	}
	source, _ := parseARN(m.StreamARN) // validated above
	p := &StreamPoller{
		cfg:               m,
		records:           records,
		invoker:           invoker,
		destination:       destination,
		logger:            logger.With("mapping", m.UUID, "function", m.FunctionName, "stream", m.StreamARN),
		filters:           filters,
		filtersReadChange: filters.names("dynamodb"),
		functionARN:       functionARN(m.FunctionName, source),
		// Retries of a failed batch, and of invokes or destination sends
		// that could not be made: 50 ms after the first failure, doubling,
		// at most 2 s; reset by a success.
		backoff:      backoff{base: 50 * time.Millisecond, max: 2 * time.Second},
		now:          time.Now,
		pollInterval: StreamPollInterval,
	}
	if m.ResumeAfter != nil {
		// Reported from the start: a restarted local cloud's stats must not
		// show the mapping at 0, and its lag as the whole stream, until Run
		// has been scheduled.
		p.checkpoint.Store(*m.ResumeAfter)
	}
	return p, nil
}

// Checkpoint returns the sequence number up to which every record is
// finished: delivered successfully, filtered out or discarded. The stream
// lag is Log.Latest(StreamARN) minus Checkpoint.
func (p *StreamPoller) Checkpoint() uint64 { return p.checkpoint.Load() }

// Lag returns how many records of the stream are not finished yet.
func (p *StreamPoller) Lag() uint64 {
	latest, cp := p.records.Latest(p.cfg.StreamARN), p.Checkpoint()
	if latest < cp {
		return 0
	}
	return latest - cp
}

// Stats returns a snapshot of the counters.
func (p *StreamPoller) Stats() StreamStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Checkpoint = p.Checkpoint()
	return s
}

// Run reads and delivers the stream until ctx is cancelled and returns nil
// then. A disabled mapping returns at once.
func (p *StreamPoller) Run(ctx context.Context) error {
	if !p.cfg.Enabled {
		p.logger.Info("event source mapping disabled")
		return nil
	}
	if p.cfg.StartingPosition == StartingPositionLatest {
		p.readPos = p.records.Latest(p.cfg.StreamARN)
	}
	if p.cfg.ResumeAfter != nil {
		p.readPos = *p.cfg.ResumeAfter
	}
	p.checkpoint.Store(p.readPos)
	if p.cfg.OnCheckpoint != nil {
		p.cfg.OnCheckpoint(p.readPos)
	}
	for {
		batch, err := p.nextBatch(ctx)
		if err == nil {
			err = p.deliver(ctx, batch)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("stream event source mapping %s: %w", p.cfg.UUID, err)
		}
		// Records read after the batch's last one were filtered out and
		// are finished with it.
		p.advance(p.readPos)
	}
}

// streamRecord is a record read from the log with its event JSON, encoded
// once for filtering and for the invocation payload.
type streamRecord struct {
	ddbstream.Record
	raw json.RawMessage
}

// nextBatch polls as Lambda does, at most every pollInterval unless the
// previous batch was full: it waits for a poll that finds a record passing
// the filters, then gathers more, up to BatchSize: those already in the
// log, or with a batching window those that arrive before it closes. So a
// steady trickle of writes reaches the function in batches of what arrived
// since the last poll, not one invocation per write.
func (p *StreamPoller) nextBatch(ctx context.Context) ([]streamRecord, error) {
	if !p.lastFull {
		if err := sleep(ctx, time.Until(p.lastPoll.Add(p.pollInterval))); err != nil {
			return nil, err
		}
	}
	var batch []streamRecord
	p.lastPoll = time.Now()
	for {
		from := p.readPos
		recs, err := p.readFiltered(ctx, p.cfg.BatchSize, false)
		if err != nil {
			return nil, err
		}
		if batch = recs; len(batch) > 0 {
			break
		}
		p.advance(p.readPos) // nothing in flight: skipped records are finished
		if p.readPos != from {
			// Only filtered-out records so far: the same poll reads on, as
			// Lambda filters what one GetRecords returns (up to 1,000).
			continue
		}
		// Sleep until something is written, then until the next poll.
		p.count(func(s *StreamStats) { s.EmptyPolls++ })
		if err := p.records.Wait(ctx, p.cfg.StreamARN, p.readPos); err != nil {
			return nil, err
		}
		next := p.lastPoll.Add(p.pollInterval)
		if late := time.Since(next); late > 0 {
			next = next.Add((late/p.pollInterval + 1) * p.pollInterval)
		}
		if err := sleep(ctx, time.Until(next)); err != nil {
			return nil, err
		}
		p.lastPoll = time.Now()
	}

	var fill context.Context
	var cancel context.CancelFunc
	if p.cfg.MaximumBatchingWindow > 0 {
		fill, cancel = context.WithTimeout(ctx, p.cfg.MaximumBatchingWindow)
	} else {
		// A done context makes Read return what is there without waiting.
		fill, cancel = context.WithCancel(ctx)
		cancel()
	}
	defer cancel()
	for len(batch) < p.cfg.BatchSize {
		recs, err := p.readFiltered(fill, p.cfg.BatchSize-len(batch), true)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			break // the window closed, or nothing more is there
		}
		batch = append(batch, recs...)
	}
	p.lastFull = len(batch) == p.cfg.BatchSize
	return batch, nil
}

// done is a context that is already cancelled: Log.Read given it returns what
// is there without waiting.
var done = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// readFiltered reads up to limit records after readPos, advances readPos
// past all of them and returns those that pass the filters. With wait it
// waits for a record until ctx is done; without, it returns what there is,
// perhaps nothing. A stream the log does not know yet is waited for: it is
// registered when its table is created, which may happen after the mapping
// starts.
func (p *StreamPoller) readFiltered(ctx context.Context, limit int, wait bool) ([]streamRecord, error) {
	for warned := false; ; warned = true {
		readCtx := ctx
		if !wait {
			readCtx = done
		}
		recs, err := p.records.Read(readCtx, p.cfg.StreamARN, p.readPos, limit)
		if !wait && errors.Is(err, context.Canceled) && ctx.Err() == nil {
			return nil, nil // nothing there
		}
		if errors.Is(err, ddbstream.ErrNoSuchStream) {
			if !warned {
				p.logger.Warn("stream does not exist yet; waiting for it")
			}
			if err := sleep(ctx, p.backoff.max); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		out := make([]streamRecord, 0, len(recs))
		skipped := 0
		for _, r := range recs {
			p.readPos = r.Seq
			r.Event.EventSourceArn = p.cfg.StreamARN
			if !p.passes(r.Event) {
				skipped++
				continue
			}
			raw, err := json.Marshal(r.Event)
			if err != nil {
				// The function could not receive it either; it is a bug
				// in whatever wrote the record.
				skipped++
				p.logger.Error("stream record cannot be encoded; skipping it", "sequenceNumber", r.Event.Change.SequenceNumber, "error", err)
				continue
			}
			out = append(out, streamRecord{Record: r, raw: raw})
		}
		if skipped > 0 {
			p.count(func(s *StreamStats) { s.Filtered += int64(skipped) })
		}
		return out, nil
	}
}

// passes reports whether the record passes the mapping's filters, matched
// against the record as the function would receive it. When no filter
// names the "dynamodb" field (the change with its images), the record is
// matched without it: most filters look at eventName alone, and encoding
// and decoding every image only to skip the record was a good part of the
// poller's work. A record that cannot be encoded passes here; the caller
// encodes it again and reports it.
func (p *StreamPoller) passes(ev events.DynamoDBEventRecord) bool {
	if len(p.filters) == 0 {
		return true
	}
	if !p.filtersReadChange {
		ev.Change = events.DynamoDBStreamRecord{}
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		return true
	}
	var event any
	if err := json.Unmarshal(raw, &event); err != nil {
		return true
	}
	return p.filters.matches(event)
}

// attempt is a (sub-)batch on its way to being finished.
type attempt struct {
	records     []streamRecord
	retries     int            // failed invocations counted against MaximumRetryAttempts
	invocations int            // invocations that carried these records
	last        *invoke.Result // the latest invocation result
}

// deliver finishes a batch: on return every record of it has been delivered
// by a successful invocation or discarded. Sub-batches are finished in
// order, so records are never delivered out of order. It returns early only
// when ctx is done.
func (p *StreamPoller) deliver(ctx context.Context, batch []streamRecord) error {
	work := []*attempt{{records: batch}}
	failures := 0 // consecutive, for the backoff
	for len(work) > 0 {
		a := work[0]
		if n := p.expired(a.records); n > 0 {
			if err := p.discard(ctx, a, a.records[:n], ConditionRecordAgeExceeded); err != nil {
				return err
			}
			a.records = a.records[n:]
			if len(a.records) == 0 {
				work = work[1:]
				continue
			}
		}

		p.count(func(s *StreamStats) { s.Batches++; s.Records += int64(len(a.records)) })
		res, err := p.invoker.Invoke(ctx, p.cfg.FunctionName, payload(a.records))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// The function was not reached: AWS retries these until the
			// records expire, without using up the retry attempts.
			failures++
			p.count(func(s *StreamStats) { s.InvokeErrors++ })
			p.logger.Warn("invoke failed; retrying", "error", err, "records", len(a.records))
			if err := sleep(ctx, p.backoff.delay(failures)); err != nil {
				return err
			}
			continue
		}
		a.invocations++
		a.last = &res

		failedFrom, complete := p.outcome(res, a.records)
		if failedFrom > 0 {
			// The records before the first failed one are done (all of
			// them when nothing failed).
			done := a.records[:failedFrom]
			p.advance(done[len(done)-1].Seq)
			p.count(func(s *StreamStats) { s.Succeeded += int64(len(done)) })
			a.records = a.records[failedFrom:]
		}
		if len(a.records) == 0 {
			work = work[1:]
			failures = 0
			continue
		}

		failures++
		if complete {
			p.count(func(s *StreamStats) { s.FunctionErrors++ })
		} else {
			p.count(func(s *StreamStats) { s.PartialFailures++ })
		}
		// "If your invocation fails and BisectBatchOnFunctionError is
		// turned on, the batch is bisected regardless of your
		// ReportBatchItemFailures setting", while a partial response
		// bisects at the reported record, which the checkpoint move above
		// did (https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html).
		// "Splitting batches doesn't consume the retry quota"
		// (https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html),
		// so both halves start with the retries already used; a retry of
		// the records left by a partial response does count, or a function
		// that keeps reporting the same record would never be given up on.
		if complete && p.cfg.BisectBatchOnFunctionError && len(a.records) > 1 {
			half := len(a.records) / 2
			first := &attempt{records: a.records[:half], retries: a.retries, invocations: a.invocations, last: a.last}
			second := &attempt{records: a.records[half:], retries: a.retries, invocations: a.invocations, last: a.last}
			work = append([]*attempt{first, second}, work[1:]...)
			p.count(func(s *StreamStats) { s.Bisects++ })
		} else {
			a.retries++
			if p.cfg.MaximumRetryAttempts != InfiniteRetries && a.retries > p.cfg.MaximumRetryAttempts {
				if err := p.discard(ctx, a, a.records, ConditionRetryAttemptsExhausted); err != nil {
					return err
				}
				work = work[1:]
				failures = 0
				continue
			}
			p.count(func(s *StreamStats) { s.Retries++ })
		}
		if err := sleep(ctx, p.backoff.delay(failures)); err != nil {
			return err
		}
	}
	return nil
}

// outcome interprets an invocation result for the given records. It returns
// the index of the first record to retry (len(records) when all succeeded)
// and whether the invocation failed as a whole.
func (p *StreamPoller) outcome(res invoke.Result, records []streamRecord) (failedFrom int, complete bool) {
	if res.Failed() {
		p.logger.Info("function error", "errorType", res.Error().ErrorType, "errorMessage", res.Error().ErrorMessage, "records", len(records))
		return 0, true
	}
	if !p.cfg.ReportBatchItemFailures {
		return len(records), false
	}
	ids, ok := parseBatchItemFailures(res.Payload)
	if !ok {
		p.logger.Warn("invalid partial batch response; the whole batch failed")
		return 0, true
	}
	failedFrom = len(records)
	for _, id := range ids {
		i := slices.IndexFunc(records, func(r streamRecord) bool { return r.Event.Change.SequenceNumber == id })
		if i < 0 {
			p.logger.Warn("partial batch response names a record outside the batch; the whole batch failed", "itemIdentifier", id)
			return 0, true
		}
		failedFrom = min(failedFrom, i)
	}
	return failedFrom, false
}

// expired returns how many leading records are older than MaximumRecordAge.
// Records are in arrival order, so the expired ones come first.
func (p *StreamPoller) expired(records []streamRecord) int {
	if p.cfg.MaximumRecordAge <= 0 {
		return 0
	}
	now := p.now()
	n := 0
	for _, r := range records {
		created := r.Event.Change.ApproximateCreationDateTime.Time
		if created.IsZero() || now.Sub(created) <= p.cfg.MaximumRecordAge {
			break
		}
		n++
	}
	return n
}

// discard gives up on records: it sends their metadata to the on-failure
// destination (retrying until it is accepted) and moves the checkpoint past
// them. It returns an error only when ctx is done first.
func (p *StreamPoller) discard(ctx context.Context, a *attempt, records []streamRecord, condition string) error {
	first, last := records[0], records[len(records)-1]
	logger := p.logger.With("condition", condition, "startSequenceNumber", first.Event.Change.SequenceNumber,
		"endSequenceNumber", last.Event.Change.SequenceNumber, "records", len(records))
	if p.cfg.OnFailure == "" {
		logger.Warn("discarding records; the mapping has no on-failure destination")
	} else {
		body, err := json.Marshal(p.failureRecord(a, records, condition))
		if err != nil {
			return fmt.Errorf("encode on-failure record: %w", err)
		}
		for failures := 1; ; failures++ {
			err := p.destination.SendToDestination(ctx, p.cfg.OnFailure, body)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			logger.Error("on-failure destination rejected the record; retrying", "error", err)
			if err := sleep(ctx, p.backoff.delay(failures)); err != nil {
				return err
			}
		}
		logger.Info("records discarded; metadata sent to the on-failure destination", "destination", p.cfg.OnFailure)
	}
	p.advance(last.Seq)
	p.count(func(s *StreamStats) { s.Discarded += int64(len(records)) })
	return nil
}

func (p *StreamPoller) failureRecord(a *attempt, records []streamRecord, condition string) OnFailureRecord {
	first, last := records[0], records[len(records)-1]
	rec := OnFailureRecord{
		RequestContext: FailureRequestContext{
			RequestID:              uuid.NewString(),
			FunctionARN:            p.functionARN,
			Condition:              condition,
			ApproximateInvokeCount: a.invocations,
		},
		Version:   "1.0",
		Timestamp: p.now().UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		DDBStreamBatchInfo: StreamBatchInfo{
			ShardID:                         p.cfg.ShardID,
			StartSequenceNumber:             first.Event.Change.SequenceNumber,
			EndSequenceNumber:               last.Event.Change.SequenceNumber,
			ApproximateArrivalOfFirstRecord: arrival(first),
			ApproximateArrivalOfLastRecord:  arrival(last),
			BatchSize:                       len(records),
			StreamARN:                       p.cfg.StreamARN,
		},
	}
	if a.last != nil {
		rec.ResponseContext = &FailureResponseContext{
			StatusCode:      200, // a function error is still a 200 Invoke response
			ExecutedVersion: "$LATEST",
			FunctionError:   a.last.FunctionError,
		}
	}
	return rec
}

func arrival(r streamRecord) string {
	t := r.Event.Change.ApproximateCreationDateTime.Time
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// payload encodes the Lambda DynamoDB event {"Records":[...]}.
func payload(records []streamRecord) []byte {
	var b bytes.Buffer
	b.WriteString(`{"Records":[`)
	for i, r := range records {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(r.raw)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// advance moves the checkpoint forward (never back).
func (p *StreamPoller) advance(seq uint64) {
	for {
		cur := p.checkpoint.Load()
		if seq <= cur {
			return
		}
		if p.checkpoint.CompareAndSwap(cur, seq) {
			if p.cfg.OnCheckpoint != nil {
				p.cfg.OnCheckpoint(seq)
			}
			return
		}
	}
}

func (p *StreamPoller) count(update func(*StreamStats)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	update(&p.stats)
}
