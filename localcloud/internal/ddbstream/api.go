package ddbstream

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// ShardID is the ID of the single shard of every local stream. One shard
// keeps one total order per stream, which is what the recorder produces.
const ShardID = "shardId-00000000000000000001-00000000"

// Limits of the DynamoDB Streams API.
const (
	maxGetRecords     = 1000
	maxGetRecordBytes = 1 << 20
	maxListStreams    = 100
)

// API serves the DynamoDB Streams API (X-Amz-Target:
// DynamoDBStreams_20120810.*) from a Log: ListStreams, DescribeStream,
// GetShardIterator and GetRecords. It is safe for concurrent use.
type API struct {
	log *Log
	now func() time.Time
}

var _ http.Handler = (*API)(nil)

// NewAPI returns the Streams API over log. Only WithClock applies.
func NewAPI(log *Log, opts ...Option) *API {
	s := newSettings(opts)
	return &API{log: log, now: s.now}
}

// ServeHTTP answers one DynamoDB Streams request in AWS JSON 1.0.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), targetStreams)
	var out any
	switch op {
	case "ListStreams":
		out, err = handle(body, a.listStreams)
	case "DescribeStream":
		out, err = handle(body, a.describeStream)
	case "GetShardIterator":
		out, err = handle(body, a.getShardIterator)
	case "GetRecords":
		out, err = handle(body, a.getRecords)
	default:
		err = &apiError{Code: "UnknownOperationException", Message: "unknown operation " + op, Status: http.StatusBadRequest}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	b, err := json.Marshal(out)
	if err != nil {
		writeError(w, err)
		return
	}
	writeBody(w, http.StatusOK, b)
}

// handle decodes the request body into In and runs op.
func handle[In, Out any](body []byte, op func(In) (Out, error)) (any, error) {
	var in In
	if len(body) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, &apiError{Code: "SerializationException", Message: err.Error(), Status: http.StatusBadRequest}
		}
	}
	return op(in)
}

type listStreamsInput struct {
	TableName               string `json:"TableName"`
	Limit                   *int   `json:"Limit"`
	ExclusiveStartStreamArn string `json:"ExclusiveStartStreamArn"`
}

type streamSummary struct {
	StreamArn   string `json:"StreamArn"`
	TableName   string `json:"TableName"`
	StreamLabel string `json:"StreamLabel"`
}

type listStreamsOutput struct {
	Streams                []streamSummary `json:"Streams"`
	LastEvaluatedStreamArn string          `json:"LastEvaluatedStreamArn,omitempty"`
}

func (a *API) listStreams(in listStreamsInput) (listStreamsOutput, error) {
	limit, err := limitOf(in.Limit, maxListStreams)
	if err != nil {
		return listStreamsOutput{}, err
	}
	out := listStreamsOutput{Streams: []streamSummary{}}
	for _, s := range a.log.Streams() {
		if in.TableName != "" && s.TableName != in.TableName {
			continue
		}
		if in.ExclusiveStartStreamArn != "" && s.StreamARN <= in.ExclusiveStartStreamArn {
			continue
		}
		if len(out.Streams) == limit {
			out.LastEvaluatedStreamArn = out.Streams[limit-1].StreamArn
			break
		}
		out.Streams = append(out.Streams, streamSummary{s.StreamARN, s.TableName, s.Label})
	}
	return out, nil
}

type describeStreamInput struct {
	StreamArn             string `json:"StreamArn"`
	Limit                 *int   `json:"Limit"`
	ExclusiveStartShardId string `json:"ExclusiveStartShardId"`
}

type sequenceNumberRange struct {
	StartingSequenceNumber string `json:"StartingSequenceNumber"`
	EndingSequenceNumber   string `json:"EndingSequenceNumber,omitempty"`
}

type shard struct {
	ShardId             string              `json:"ShardId"`
	SequenceNumberRange sequenceNumberRange `json:"SequenceNumberRange"`
}

type streamDescription struct {
	StreamArn               string       `json:"StreamArn"`
	StreamLabel             string       `json:"StreamLabel"`
	StreamStatus            string       `json:"StreamStatus"`
	StreamViewType          string       `json:"StreamViewType,omitempty"`
	CreationRequestDateTime float64      `json:"CreationRequestDateTime"`
	TableName               string       `json:"TableName"`
	KeySchema               []KeyElement `json:"KeySchema,omitempty"`
	Shards                  []shard      `json:"Shards"`
}

type describeStreamOutput struct {
	StreamDescription streamDescription `json:"StreamDescription"`
}

func (a *API) describeStream(in describeStreamInput) (describeStreamOutput, error) {
	if in.StreamArn == "" {
		return describeStreamOutput{}, validationError("StreamArn is required")
	}
	if _, err := limitOf(in.Limit, maxListStreams); err != nil {
		return describeStreamOutput{}, err
	}
	info, ok := a.log.Info(in.StreamArn)
	if !ok {
		return describeStreamOutput{}, notFoundError("Requested resource not found: Stream: %s not found", in.StreamArn)
	}
	desc := streamDescription{
		StreamArn:               info.StreamARN,
		StreamLabel:             info.Label,
		StreamStatus:            "ENABLED",
		StreamViewType:          info.ViewType,
		CreationRequestDateTime: float64(info.CreatedAt.UnixMilli()) / 1000,
		TableName:               info.TableName,
		KeySchema:               info.KeySchema,
		Shards:                  []shard{},
	}
	if in.ExclusiveStartShardId != ShardID {
		sh := shard{ShardId: ShardID, SequenceNumberRange: sequenceNumberRange{StartingSequenceNumber: SequenceString(1)}}
		if latest := a.log.Latest(info.StreamARN); !info.Enabled && latest > 0 {
			sh.SequenceNumberRange.EndingSequenceNumber = SequenceString(latest)
		}
		desc.Shards = append(desc.Shards, sh)
	}
	if !info.Enabled {
		desc.StreamStatus = "DISABLED"
	}
	return describeStreamOutput{desc}, nil
}

type getShardIteratorInput struct {
	StreamArn         string `json:"StreamArn"`
	ShardId           string `json:"ShardId"`
	ShardIteratorType string `json:"ShardIteratorType"`
	SequenceNumber    string `json:"SequenceNumber"`
}

type getShardIteratorOutput struct {
	ShardIterator string `json:"ShardIterator"`
}

func (a *API) getShardIterator(in getShardIteratorInput) (getShardIteratorOutput, error) {
	if in.StreamArn == "" || in.ShardId == "" || in.ShardIteratorType == "" {
		return getShardIteratorOutput{}, validationError("StreamArn, ShardId and ShardIteratorType are required")
	}
	if !a.log.Has(in.StreamArn) {
		return getShardIteratorOutput{}, notFoundError("Requested resource not found: Stream: %s not found", in.StreamArn)
	}
	if in.ShardId != ShardID {
		return getShardIteratorOutput{}, notFoundError("Requested resource not found: Shard: %s in Stream: %s not found", in.ShardId, in.StreamArn)
	}
	latest := a.log.Latest(in.StreamArn)
	var after uint64
	switch in.ShardIteratorType {
	case "TRIM_HORIZON":
		after = 0
	case "LATEST":
		after = latest
	case "AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER":
		seq, err := strconv.ParseUint(in.SequenceNumber, 10, 64)
		if err != nil || seq == 0 || seq > latest {
			return getShardIteratorOutput{}, validationError("Invalid SequenceNumber %q for shard %s (records 1 to %d)", in.SequenceNumber, ShardID, latest)
		}
		after = seq
		if in.ShardIteratorType == "AT_SEQUENCE_NUMBER" {
			after = seq - 1
		}
	default:
		return getShardIteratorOutput{}, validationError("invalid ShardIteratorType %q", in.ShardIteratorType)
	}
	it := shardIterator{StreamARN: in.StreamArn, After: after, IssuedAt: a.now().UnixNano()}
	return getShardIteratorOutput{it.String()}, nil
}

type getRecordsInput struct {
	ShardIterator string `json:"ShardIterator"`
	Limit         *int   `json:"Limit"`
}

// wireRecord is a record as GetRecords returns it: the Lambda event record
// without eventSourceARN, which only Lambda adds.
type wireRecord struct {
	AWSRegion    string                       `json:"awsRegion"`
	Change       events.DynamoDBStreamRecord  `json:"dynamodb"`
	EventID      string                       `json:"eventID"`
	EventName    string                       `json:"eventName"`
	EventSource  string                       `json:"eventSource"`
	EventVersion string                       `json:"eventVersion"`
	UserIdentity *events.DynamoDBUserIdentity `json:"userIdentity,omitempty"`
}

type getRecordsOutput struct {
	Records           []wireRecord `json:"Records"`
	NextShardIterator string       `json:"NextShardIterator,omitempty"`
}

// getRecords returns the records after the iterator's position without
// waiting, as AWS does. The next iterator is omitted only when the stream
// is disabled and the reader has seen all of it (a closed shard).
func (a *API) getRecords(in getRecordsInput) (getRecordsOutput, error) {
	limit, err := limitOf(in.Limit, maxGetRecords)
	if err != nil {
		return getRecordsOutput{}, err
	}
	it, err := parseIterator(in.ShardIterator)
	if err != nil {
		return getRecordsOutput{}, validationError("Invalid ShardIterator")
	}
	info, ok := a.log.Info(it.StreamARN)
	if !ok {
		return getRecordsOutput{}, notFoundError("Requested resource not found: Stream: %s not found", it.StreamARN)
	}
	now := a.now()
	if it.expired(now) {
		return getRecordsOutput{}, &apiError{Code: "ExpiredIteratorException", Status: http.StatusBadRequest,
			Message: "Iterator expired. The iterator was created more than 15 minutes ago."}
	}
	latest := a.log.Latest(it.StreamARN)
	if it.After > latest {
		return getRecordsOutput{}, validationError("Invalid ShardIterator")
	}
	recs, err := a.log.Since(it.StreamARN, it.After, limit)
	if err != nil {
		return getRecordsOutput{}, notFoundError("Requested resource not found: Stream: %s not found", it.StreamARN)
	}
	out := getRecordsOutput{Records: make([]wireRecord, 0, len(recs))}
	var size int64
	for _, r := range recs {
		size += r.Event.Change.SizeBytes
		if len(out.Records) > 0 && size > maxGetRecordBytes {
			break
		}
		ev := r.Event
		out.Records = append(out.Records, wireRecord{ev.AWSRegion, ev.Change, ev.EventID, ev.EventName,
			ev.EventSource, ev.EventVersion, ev.UserIdentity})
		it.After = r.Seq
	}
	if info.Enabled || it.After < latest {
		it.IssuedAt = now.UnixNano()
		out.NextShardIterator = it.String()
	}
	return out, nil
}

// limitOf validates an optional Limit of 1..max, defaulting to max.
func limitOf(limit *int, maxLimit int) (int, error) {
	if limit == nil {
		return maxLimit, nil
	}
	if *limit < 1 || *limit > maxLimit {
		return 0, validationError("Limit must be between 1 and %d", maxLimit)
	}
	return *limit, nil
}
