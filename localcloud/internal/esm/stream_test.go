package esm

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/internal/ddbstream"
	"github.com/clubdev/club/localcloud/invoke"
)

const (
	testTableARN   = "arn:aws:dynamodb:us-east-1:000000000000:table/outbox"
	testFailureARN = "arn:aws:sqs:us-east-1:000000000000:outbox-failures"
)

var testStreamARN = ddbstream.StreamARN(testTableARN)

// streamSetup is a stream poller wired to an in-memory log, a fake function
// and a fake on-failure destination.
type streamSetup struct {
	log    *ddbstream.Log
	fn     *fakeInvoker
	dest   *fakeDestination
	poller *StreamPoller
}

// newStreamSetup builds a poller for the mapping; unset fields get test
// defaults (function "relay", TRIM_HORIZON, enabled, infinite retries).
func newStreamSetup(t *testing.T, m StreamMapping, handle func(batch []events.DynamoDBEventRecord) invoke.Result) *streamSetup {
	t.Helper()
	s := &streamSetup{log: ddbstream.NewLog(), dest: &fakeDestination{}}
	s.log.Register(testStreamARN)
	s.fn = &fakeInvoker{handle: func(_ int, payload []byte) (invoke.Result, error) {
		if handle == nil {
			return invoke.Result{Payload: []byte("null")}, nil
		}
		return handle(decodeStreamEvent(t, payload)), nil
	}}
	m.UUID = "mapping-" + t.Name()
	if m.FunctionName == "" {
		m.FunctionName = "relay"
	}
	m.StreamARN = testStreamARN
	if m.StartingPosition == "" {
		m.StartingPosition = StartingPositionTrimHorizon
	}
	m.Enabled = true
	p, err := NewStreamPoller(m, s.log, s.fn, s.dest, quietLogger())
	require.NoError(t, err)
	p.backoff = backoff{base: time.Millisecond, max: 10 * time.Millisecond}
	s.poller = p
	return s
}

// item returns an INSERT record whose NewImage has the given id and type.
func item(id int, typ string) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{
		AWSRegion:    "us-east-1",
		EventID:      fmt.Sprintf("event-%d", id),
		EventName:    "INSERT",
		EventSource:  "aws:dynamodb",
		EventVersion: "1.1",
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: time.Now()},
			Keys:                        map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute(fmt.Sprintf("ITEM#%d", id))},
			NewImage: map[string]events.DynamoDBAttributeValue{
				"pk":   events.NewStringAttribute(fmt.Sprintf("ITEM#%d", id)),
				"type": events.NewStringAttribute(typ),
			},
			StreamViewType: "NEW_IMAGE",
		},
	}
}

func items(from, to int, typ string) []events.DynamoDBEventRecord {
	var out []events.DynamoDBEventRecord
	for id := from; id <= to; id++ {
		out = append(out, item(id, typ))
	}
	return out
}

func decodeStreamEvent(t *testing.T, payload []byte) []events.DynamoDBEventRecord {
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Errorf("function got an invalid DynamoDB event: %v", err)
	}
	return ev.Records
}

func seqOf(t *testing.T, r events.DynamoDBEventRecord) uint64 {
	n, err := strconv.ParseUint(r.Change.SequenceNumber, 10, 64)
	require.NoError(t, err)
	return n
}

// invocations returns the sequence numbers of every invocation, in order.
func (s *streamSetup) invocations(t *testing.T) [][]uint64 {
	var out [][]uint64
	for _, p := range s.fn.calls() {
		var seqs []uint64
		for _, r := range decodeStreamEvent(t, p) {
			seqs = append(seqs, seqOf(t, r))
		}
		out = append(out, seqs)
	}
	return out
}

func hasType(batch []events.DynamoDBEventRecord, typ string) bool {
	return slices.ContainsFunc(batch, func(r events.DynamoDBEventRecord) bool { return r.Change.NewImage["type"].String() == typ })
}

func seqRange(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func TestStreamPreservesOrder(t *testing.T) {
	t.Parallel()
	s := newStreamSetup(t, StreamMapping{BatchSize: 7}, nil)
	run(t, s.poller)

	// Append while the poller runs, in transactions of up to 10 records.
	const total = 300
	for id := 1; id <= total; id += 10 {
		s.log.Append(testStreamARN, items(id, id+9, "order.placed")...)
	}
	waitFor(t, 10*time.Second, "checkpoint reaches the last record", func() bool { return s.poller.Checkpoint() == total })

	var delivered []uint64
	for _, batch := range s.invocations(t) {
		require.LessOrEqual(t, len(batch), 7, "batch size")
		delivered = append(delivered, batch...)
	}
	require.Equal(t, seqRange(1, total), delivered, "every record once, in sequence order")
	require.Equal(t, 1, s.fn.peak(), "one batch in flight per shard")
	require.Zero(t, s.poller.Lag())
	st := s.poller.Stats()
	require.EqualValues(t, total, st.Succeeded)
	require.EqualValues(t, total, st.Checkpoint)
}

func TestStreamEventShape(t *testing.T) {
	t.Parallel()
	s := newStreamSetup(t, StreamMapping{}, nil)
	run(t, s.poller)
	s.log.Append(testStreamARN, item(1, "order.placed"))
	waitFor(t, 5*time.Second, "delivery", func() bool { return len(s.fn.calls()) == 1 })

	var raw map[string][]map[string]any
	require.NoError(t, json.Unmarshal(s.fn.calls()[0], &raw))
	require.Len(t, raw["Records"], 1)
	rec := raw["Records"][0]
	require.Equal(t, testStreamARN, rec["eventSourceARN"])
	require.Equal(t, "INSERT", rec["eventName"])
	require.Equal(t, "aws:dynamodb", rec["eventSource"])
	change := rec["dynamodb"].(map[string]any)
	require.Equal(t, ddbstream.SequenceString(1), change["SequenceNumber"])
	require.Equal(t, map[string]any{"S": "order.placed"}, change["NewImage"].(map[string]any)["type"])
}

func TestStreamBisectIsolatesPoisonRecord(t *testing.T) {
	t.Parallel()
	s := newStreamSetup(t, StreamMapping{
		BatchSize:                  10,
		BisectBatchOnFunctionError: true,
		MaximumRetryAttempts:       2,
		OnFailure:                  testFailureARN,
	}, func(batch []events.DynamoDBEventRecord) invoke.Result {
		if hasType(batch, "poison") {
			return functionError("cannot handle poison")
		}
		return invoke.Result{Payload: []byte("null")}
	})
	// One transaction, so that the first batch holds all eight records.
	recs := items(1, 8, "order.placed")
	recs[4] = item(5, "poison")
	s.log.Append(testStreamARN, recs...)
	run(t, s.poller)

	waitFor(t, 10*time.Second, "batch finished", func() bool { return s.poller.Checkpoint() == 8 })

	// [1-8] fails → [1-4] ok, [5-8] fails → [5,6] fails → [5] fails three
	// times (1 + 2 retries) and is discarded → [6] ok, [7,8] ok.
	require.Equal(t, [][]uint64{
		{1, 2, 3, 4, 5, 6, 7, 8},
		{1, 2, 3, 4},
		{5, 6, 7, 8},
		{5, 6},
		{5}, {5}, {5},
		{6},
		{7, 8},
	}, s.invocations(t))

	sent := s.dest.sent()
	require.Len(t, sent, 1, "one on-failure record")
	require.Equal(t, []string{testFailureARN}, s.dest.arns)
	rec := sent[0]
	require.Equal(t, ConditionRetryAttemptsExhausted, rec.RequestContext.Condition)
	require.Equal(t, "arn:aws:lambda:us-east-1:000000000000:function:relay", rec.RequestContext.FunctionARN)
	require.NotEmpty(t, rec.RequestContext.RequestID)
	require.Equal(t, 6, rec.RequestContext.ApproximateInvokeCount, "invocations that carried the record")
	require.NotNil(t, rec.ResponseContext)
	require.Equal(t, FailureResponseContext{StatusCode: 200, ExecutedVersion: "$LATEST", FunctionError: "Unhandled"}, *rec.ResponseContext)
	require.Equal(t, "1.0", rec.Version)
	_, err := time.Parse(time.RFC3339Nano, rec.Timestamp)
	require.NoError(t, err)
	info := rec.DDBStreamBatchInfo
	require.Equal(t, ddbstream.SequenceString(5), info.StartSequenceNumber)
	require.Equal(t, ddbstream.SequenceString(5), info.EndSequenceNumber)
	require.Equal(t, 1, info.BatchSize)
	require.Equal(t, testStreamARN, info.StreamARN)
	require.Equal(t, ddbstream.ShardID, info.ShardID)
	require.NotEmpty(t, info.ApproximateArrivalOfFirstRecord)

	st := s.poller.Stats()
	require.EqualValues(t, 3, st.Bisects)
	require.EqualValues(t, 2, st.Retries)
	require.EqualValues(t, 1, st.Discarded)
	require.EqualValues(t, 7, st.Succeeded)

	// Processing continues after the discarded record.
	s.log.Append(testStreamARN, item(9, "order.placed"))
	waitFor(t, 5*time.Second, "next record delivered", func() bool { return s.poller.Checkpoint() == 9 })
	calls := s.invocations(t)
	require.Equal(t, []uint64{9}, calls[len(calls)-1])
}

func TestStreamFiltersDropNonMatchingRecords(t *testing.T) {
	t.Parallel()
	s := newStreamSetup(t, StreamMapping{
		BatchSize: 4,
		Filters: []string{
			`{"eventName": ["INSERT"], "dynamodb": {"NewImage": {"type": {"S": ["order.placed"]}}}}`,
			`{"eventName": ["REMOVE"]}`,
		},
	}, nil)
	run(t, s.poller)

	var recs []events.DynamoDBEventRecord
	var want []uint64
	for id := 1; id <= 20; id++ {
		r := item(id, "member.joined")
		switch id % 4 {
		case 0:
			r = item(id, "order.placed") // matches the first filter
			want = append(want, uint64(id))
		case 1:
			r.EventName = "REMOVE" // matches the second filter
			want = append(want, uint64(id))
		case 2:
			r.EventName = "MODIFY"
			r.Change.NewImage["type"] = events.NewStringAttribute("order.placed")
		}
		recs = append(recs, r)
	}
	// The last records are filtered out: the checkpoint must still pass them.
	recs = append(recs, item(21, "member.joined"), item(22, "member.joined"))
	for _, r := range recs {
		s.log.Append(testStreamARN, r)
	}
	waitFor(t, 5*time.Second, "checkpoint passes the filtered tail", func() bool { return s.poller.Checkpoint() == 22 })

	var delivered []uint64
	for _, batch := range s.invocations(t) {
		delivered = append(delivered, batch...)
	}
	require.Equal(t, want, delivered, "only matching records reach the function")
	st := s.poller.Stats()
	require.EqualValues(t, 22-len(want), st.Filtered)
	require.EqualValues(t, len(want), st.Succeeded)
}

func TestStreamReportBatchItemFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		first      invoke.Result // the answer to the first invocation; later ones succeed
		wantCalls  [][]uint64
		partial    int64
		completely int64
	}{
		{
			name:      "resumes at the lowest reported record",
			first:     batchFailures(ddbstream.SequenceString(5), ddbstream.SequenceString(4)),
			wantCalls: [][]uint64{{1, 2, 3, 4, 5, 6}, {4, 5, 6}},
			partial:   1,
		},
		{
			name:      "first record reported retries the whole batch",
			first:     batchFailures(ddbstream.SequenceString(1)),
			wantCalls: [][]uint64{{1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 6}},
			partial:   1,
		},
		{
			name:       "identifier outside the batch fails the whole batch",
			first:      batchFailures("999"),
			wantCalls:  [][]uint64{{1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 6}},
			completely: 1,
		},
		{
			name:       "empty identifier fails the whole batch",
			first:      batchFailures(""),
			wantCalls:  [][]uint64{{1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 6}},
			completely: 1,
		},
		{
			name:       "response that is not an object fails the whole batch",
			first:      invoke.Result{Payload: []byte(`"done"`)},
			wantCalls:  [][]uint64{{1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 6}},
			completely: 1,
		},
		{
			name:      "empty list is a success",
			first:     batchFailures(),
			wantCalls: [][]uint64{{1, 2, 3, 4, 5, 6}},
		},
		{
			name:      "null response is a success",
			first:     invoke.Result{Payload: []byte("null")},
			wantCalls: [][]uint64{{1, 2, 3, 4, 5, 6}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			s := newStreamSetup(t, StreamMapping{ReportBatchItemFailures: true, MaximumRetryAttempts: InfiniteRetries},
				func([]events.DynamoDBEventRecord) invoke.Result {
					calls++ // invocations of one stream never overlap
					if calls == 1 {
						return tt.first
					}
					return invoke.Result{Payload: []byte(`{"batchItemFailures":[]}`)}
				})
			s.log.Append(testStreamARN, items(1, 6, "order.placed")...)
			run(t, s.poller)

			waitFor(t, 5*time.Second, "batch finished", func() bool { return s.poller.Checkpoint() == 6 })
			require.Equal(t, tt.wantCalls, s.invocations(t))
			st := s.poller.Stats()
			require.Equal(t, tt.partial, st.PartialFailures)
			require.Equal(t, tt.completely, st.FunctionErrors)
			require.EqualValues(t, 6, st.Succeeded)
			require.Zero(t, st.Discarded)
		})
	}
}

func TestStreamRetriesExhausted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		maxRetries  int
		wantInvokes int
	}{
		{"no retries sends at once", 0, 1},
		{"three retries", 3, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStreamSetup(t, StreamMapping{MaximumRetryAttempts: tt.maxRetries, OnFailure: testFailureARN},
				func(batch []events.DynamoDBEventRecord) invoke.Result {
					if hasType(batch, "bad") {
						return functionError("bad record")
					}
					return invoke.Result{}
				})
			s.log.Append(testStreamARN, items(1, 3, "bad")...)
			run(t, s.poller)

			waitFor(t, 5*time.Second, "on-failure record sent", func() bool { return len(s.dest.sent()) == 1 })
			rec := s.dest.sent()[0]
			require.Equal(t, ConditionRetryAttemptsExhausted, rec.RequestContext.Condition)
			require.Equal(t, tt.wantInvokes, rec.RequestContext.ApproximateInvokeCount)
			require.Equal(t, ddbstream.SequenceString(1), rec.DDBStreamBatchInfo.StartSequenceNumber)
			require.Equal(t, ddbstream.SequenceString(3), rec.DDBStreamBatchInfo.EndSequenceNumber)
			require.Equal(t, 3, rec.DDBStreamBatchInfo.BatchSize)
			require.Len(t, s.invocations(t), tt.wantInvokes)

			// The poller moves on.
			s.log.Append(testStreamARN, item(4, "order.placed"))
			waitFor(t, 5*time.Second, "next record delivered", func() bool { return s.poller.Checkpoint() == 4 })
			calls := s.invocations(t)
			require.Len(t, calls, tt.wantInvokes+1)
			require.Equal(t, []uint64{4}, calls[len(calls)-1])
		})
	}
}

func TestStreamRetriesUntilSuccess(t *testing.T) {
	t.Parallel()
	calls := 0
	s := newStreamSetup(t, StreamMapping{MaximumRetryAttempts: InfiniteRetries}, func([]events.DynamoDBEventRecord) invoke.Result {
		calls++
		if calls <= 3 {
			return functionError("transient")
		}
		return invoke.Result{}
	})
	s.log.Append(testStreamARN, items(1, 3, "order.placed")...)
	run(t, s.poller)

	waitFor(t, 5*time.Second, "batch finished", func() bool { return s.poller.Checkpoint() == 3 })
	require.Equal(t, [][]uint64{{1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}}, s.invocations(t))
	st := s.poller.Stats()
	require.EqualValues(t, 3, st.Retries)
	require.EqualValues(t, 3, st.FunctionErrors)
	require.Zero(t, st.Discarded)
	require.Empty(t, s.dest.sent())
}

func TestStreamInvokeErrorsDoNotUseRetries(t *testing.T) {
	t.Parallel()
	s := newStreamSetup(t, StreamMapping{MaximumRetryAttempts: 0, OnFailure: testFailureARN}, nil)
	s.fn.handle = func(call int, _ []byte) (invoke.Result, error) {
		if call <= 3 {
			return invoke.Result{}, fmt.Errorf("function process not ready")
		}
		return invoke.Result{}, nil
	}
	s.log.Append(testStreamARN, items(1, 2, "order.placed")...)
	run(t, s.poller)

	waitFor(t, 5*time.Second, "batch finished", func() bool { return s.poller.Checkpoint() == 2 })
	require.Len(t, s.fn.calls(), 4)
	require.Empty(t, s.dest.sent(), "no retry attempt was used")
	require.EqualValues(t, 3, s.poller.Stats().InvokeErrors)
}

func TestStreamRecordAgeExceeded(t *testing.T) {
	t.Parallel()
	s := newStreamSetup(t, StreamMapping{MaximumRecordAge: time.Minute, OnFailure: testFailureARN}, nil)
	old := items(1, 2, "order.placed")
	for i := range old {
		old[i].Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: time.Now().Add(-2 * time.Hour)}
	}
	s.log.Append(testStreamARN, append(old, item(3, "order.placed"))...)
	run(t, s.poller)

	waitFor(t, 5*time.Second, "batch finished", func() bool { return s.poller.Checkpoint() == 3 })
	require.Equal(t, [][]uint64{{3}}, s.invocations(t), "expired records never reach the function")
	sent := s.dest.sent()
	require.Len(t, sent, 1)
	require.Equal(t, ConditionRecordAgeExceeded, sent[0].RequestContext.Condition)
	require.Zero(t, sent[0].RequestContext.ApproximateInvokeCount)
	require.Nil(t, sent[0].ResponseContext, "no invocation happened")
	require.Equal(t, 2, sent[0].DDBStreamBatchInfo.BatchSize)
	require.Equal(t, ddbstream.SequenceString(2), sent[0].DDBStreamBatchInfo.EndSequenceNumber)
}

func TestStreamStartingPositionLatest(t *testing.T) {
	t.Parallel()
	s := newStreamSetup(t, StreamMapping{StartingPosition: StartingPositionLatest}, nil)
	s.log.Append(testStreamARN, items(1, 3, "order.placed")...)
	run(t, s.poller)
	waitFor(t, 5*time.Second, "poller started at the stream's end", func() bool { return s.poller.Checkpoint() == 3 })

	s.log.Append(testStreamARN, items(4, 5, "order.placed")...)
	waitFor(t, 5*time.Second, "new records delivered", func() bool { return s.poller.Checkpoint() == 5 })
	require.Equal(t, [][]uint64{{4, 5}}, s.invocations(t))
}

func TestStreamBatchingWindowGathersRecords(t *testing.T) {
	t.Parallel()
	s := newStreamSetup(t, StreamMapping{MaximumBatchingWindow: 400 * time.Millisecond}, nil)
	run(t, s.poller)

	for id := 1; id <= 5; id++ { // separate writes, a few milliseconds apart
		s.log.Append(testStreamARN, item(id, "order.placed"))
		time.Sleep(5 * time.Millisecond)
	}
	waitFor(t, 5*time.Second, "batch delivered", func() bool { return s.poller.Checkpoint() == 5 })
	require.Equal(t, [][]uint64{{1, 2, 3, 4, 5}}, s.invocations(t))
}

func TestStreamWaitsForUnregisteredStream(t *testing.T) {
	t.Parallel()
	s := newStreamSetup(t, StreamMapping{}, nil)
	other := ddbstream.StreamARN("arn:aws:dynamodb:us-east-1:000000000000:table/later")
	p, err := NewStreamPoller(StreamMapping{
		UUID: "later", FunctionName: "relay", StreamARN: other,
		StartingPosition: StartingPositionTrimHorizon, Enabled: true,
	}, s.log, s.fn, nil, quietLogger())
	require.NoError(t, err)
	p.backoff = backoff{base: time.Millisecond, max: 10 * time.Millisecond}
	run(t, p)

	s.log.Append(other, item(1, "order.placed")) // registers the stream
	waitFor(t, 5*time.Second, "record delivered", func() bool { return p.Checkpoint() == 1 })
}

func TestStreamMappingValidation(t *testing.T) {
	t.Parallel()
	valid := StreamMapping{FunctionName: "relay", StreamARN: testStreamARN, StartingPosition: StartingPositionTrimHorizon}
	tests := []struct {
		name    string
		change  func(*StreamMapping)
		dest    DestinationSender
		wantErr string
	}{
		{"missing function", func(m *StreamMapping) { m.FunctionName = "" }, nil, "FunctionName is required"},
		{"stream ARN not an ARN", func(m *StreamMapping) { m.StreamARN = "outbox" }, nil, "StreamARN"},
		{"stream ARN of another service", func(m *StreamMapping) { m.StreamARN = testFailureARN }, nil, "not a DynamoDB stream ARN"},
		{"starting position", func(m *StreamMapping) { m.StartingPosition = "AT_TIMESTAMP" }, nil, "StartingPosition"},
		{"batch size", func(m *StreamMapping) { m.BatchSize = 10001 }, nil, "BatchSize"},
		{"retries below -1", func(m *StreamMapping) { m.MaximumRetryAttempts = -2 }, nil, "MaximumRetryAttempts"},
		{"retries above 10000", func(m *StreamMapping) { m.MaximumRetryAttempts = 10001 }, nil, "MaximumRetryAttempts"},
		{"record age", func(m *StreamMapping) { m.MaximumRecordAge = 8 * 24 * time.Hour }, nil, "MaximumRecordAge"},
		{"window", func(m *StreamMapping) { m.MaximumBatchingWindow = 301 * time.Second }, nil, "MaximumBatchingWindow"},
		{"destination service", func(m *StreamMapping) { m.OnFailure = "arn:aws:s3:::bucket" }, &fakeDestination{}, "neither an SQS queue nor an SNS topic"},
		{"destination without sender", func(m *StreamMapping) { m.OnFailure = testFailureARN }, nil, "no destination sender"},
		{"invalid filter", func(m *StreamMapping) { m.Filters = []string{`{"eventName": "INSERT"}`} }, nil, "Filters: filter 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := valid
			tt.change(&m)
			_, err := NewStreamPoller(m, ddbstream.NewLog(), &fakeInvoker{}, tt.dest, quietLogger())
			require.ErrorContains(t, err, tt.wantErr)
		})
	}

	t.Run("valid with defaults", func(t *testing.T) {
		t.Parallel()
		p, err := NewStreamPoller(valid, ddbstream.NewLog(), &fakeInvoker{}, nil, quietLogger())
		require.NoError(t, err)
		require.Equal(t, DefaultStreamBatchSize, p.cfg.BatchSize)
	})

	t.Run("disabled mapping returns at once", func(t *testing.T) {
		t.Parallel()
		p, err := NewStreamPoller(valid, ddbstream.NewLog(), &fakeInvoker{}, nil, quietLogger())
		require.NoError(t, err)
		require.NoError(t, p.Run(t.Context()))
	})
}

func TestStreamPartialFailureRetriesAndBisect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		bisect    bool
		wantCalls [][]uint64
	}{
		// The reported record stays failed: the rest of the batch after it
		// is retried once, then discarded.
		{"without bisect", false, [][]uint64{{1, 2, 3, 4, 5, 6}, {4, 5, 6}}},
		// A partial response is not bisected in halves: the batch is split
		// at the reported record only.
		{"with bisect", true, [][]uint64{{1, 2, 3, 4, 5, 6}, {4, 5, 6}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStreamSetup(t, StreamMapping{
				ReportBatchItemFailures:    true,
				BisectBatchOnFunctionError: tt.bisect,
				MaximumRetryAttempts:       1,
				OnFailure:                  testFailureARN,
			}, func([]events.DynamoDBEventRecord) invoke.Result {
				return batchFailures(ddbstream.SequenceString(4))
			})
			s.log.Append(testStreamARN, items(1, 6, "order.placed")...)
			run(t, s.poller)

			waitFor(t, 5*time.Second, "batch finished", func() bool { return s.poller.Checkpoint() == 6 })
			require.Equal(t, tt.wantCalls, s.invocations(t))
			sent := s.dest.sent()
			require.Len(t, sent, 1)
			require.Equal(t, ddbstream.SequenceString(4), sent[0].DDBStreamBatchInfo.StartSequenceNumber)
			require.Equal(t, ddbstream.SequenceString(6), sent[0].DDBStreamBatchInfo.EndSequenceNumber)
			require.Equal(t, 3, sent[0].DDBStreamBatchInfo.BatchSize)
			require.Empty(t, sent[0].ResponseContext.FunctionError, "the function itself succeeded")
			st := s.poller.Stats()
			require.EqualValues(t, 3, st.Succeeded)
			require.EqualValues(t, 3, st.Discarded)
			require.Zero(t, st.Bisects)
		})
	}
}

// TestStreamPollsAtTheBaseRate: a steady trickle of single writes reaches
// the function in batches, at most one per StreamPollInterval (AWS polls a
// shard four times a second), not one invocation per write; a backlog goes
// in full batches.
func TestStreamPollsAtTheBaseRate(t *testing.T) {
	t.Parallel()
	s := newStreamSetup(t, StreamMapping{BatchSize: 100}, nil)
	run(t, s.poller)

	start := time.Now()
	const writes = 60
	for id := 1; id <= writes; id++ {
		s.log.Append(testStreamARN, item(id, "order.placed"))
		time.Sleep(10 * time.Millisecond)
	}
	waitFor(t, 10*time.Second, "every record delivered", func() bool { return s.poller.Checkpoint() == writes })
	polls := int(time.Since(start)/StreamPollInterval) + 1
	var delivered []uint64
	for _, batch := range s.invocations(t) {
		delivered = append(delivered, batch...)
	}
	require.Equal(t, seqRange(1, writes), delivered)
	require.LessOrEqual(t, len(s.invocations(t)), polls, "at most one batch per poll interval")

	// A backlog: 350 records at once go in full batches back to back.
	s.log.Append(testStreamARN, items(writes+1, writes+350, "order.placed")...)
	waitFor(t, 10*time.Second, "backlog delivered", func() bool { return s.poller.Checkpoint() == writes+350 })
	calls := s.invocations(t)
	require.Equal(t, []int{100, 100, 100, 50}, batchSizes(calls[len(calls)-4:]))
}

func batchSizes(calls [][]uint64) []int {
	out := make([]int, len(calls))
	for i, c := range calls {
		out[i] = len(c)
	}
	return out
}

// TestStreamFilteredRecordsDoNotCostAPoll: with a batch of one record and
// every other record filtered out (the relay's own marks), a backlog is read
// in one go: a poll that finds only filtered records reads on instead of
// waiting for the next poll.
func TestStreamFilteredRecordsDoNotCostAPoll(t *testing.T) {
	t.Parallel()
	s := newStreamSetup(t, StreamMapping{BatchSize: 1, Filters: []string{`{"eventName": ["INSERT"]}`}}, nil)
	var recs []events.DynamoDBEventRecord
	for id := 1; id <= 40; id += 2 {
		mark := item(id+1, "order.placed")
		mark.EventName = "MODIFY"
		recs = append(recs, item(id, "order.placed"), mark)
	}
	s.log.Append(testStreamARN, recs...)
	run(t, s.poller)
	waitFor(t, 10*time.Second, "every record finished", func() bool { return s.poller.Checkpoint() == 40 })
	st := s.poller.Stats()
	require.EqualValues(t, 20, st.Succeeded)
	require.EqualValues(t, 20, st.Filtered)
	require.LessOrEqual(t, st.EmptyPolls, int64(1), "no wait while the backlog lasted, at most one at its end")
}
