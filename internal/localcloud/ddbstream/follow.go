package ddbstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// ownAuthorization is the Authorization header of the recorder's own calls.
// No engine checks the signature, but moto tells services apart by the
// credential scope of an unsigned request's header.
const ownAuthorization = "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0"

// followInterval is how often FollowEngine asks the engine for new records.
const followInterval = 100 * time.Millisecond

// WithEngineRecords says the engine writes stream records itself (moto
// does): the recorder forwards writes without reading images, and
// FollowEngine copies the engine's records into the log instead. Table
// descriptions, ClientRequestToken idempotency and cancellation reasons are
// handled as with any engine.
//
// exclusive runs a function with the engine to itself (front's
// EngineExclusive): the follower takes a fresh shard iterator and reads
// with it in one such turn, because moto replaces a table's stream shard
// when a transaction on the table is cancelled, and an iterator taken
// before that sees a record of the cancelled write and never a later one.
func WithEngineRecords(exclusive func(fn func(engine http.Handler))) Option {
	return func(s *settings) { s.engineRecords, s.exclusive = true, exclusive }
}

// FollowEngine copies the stream records the engine writes, for every
// stream-enabled table the recorder knows, into the log, in the engine's
// order, until ctx is done. Only for a recorder made WithEngineRecords.
//
// Each record keeps the engine's event ID, images and creation time; its
// sequence number and source ARN become the log's, so the mappings and the
// Streams API see one stream per table whichever engine wrote it.
func (rec *Recorder) FollowEngine(ctx context.Context) {
	cursors := map[string]*engineCursor{} // by table name
	tick := time.NewTicker(followInterval)
	defer tick.Stop()
	for {
		for _, t := range rec.tables.streaming() {
			cur, ok := cursors[t.Name]
			if !ok || cur.tableARN != t.ARN {
				cur = &engineCursor{table: t.Name, tableARN: t.ARN, last: map[string]string{}}
				cursors[t.Name] = cur
			}
			if err := rec.follow(ctx, cur, t); err != nil && ctx.Err() == nil {
				rec.logger.Warn("reading the engine's stream records failed; retrying", "table", t.Name, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// engineCursor is how far a table's engine stream has been copied.
type engineCursor struct {
	table, tableARN string
	streamARN       string            // the engine's
	last            map[string]string // sequence number of the last record copied, by shard ID
}

// follow copies what is new in one table's engine stream.
func (rec *Recorder) follow(ctx context.Context, cur *engineCursor, t tableMeta) error {
	if cur.streamARN == "" {
		var out struct {
			Table struct{ LatestStreamArn string }
		}
		if err := rec.engineCall(ctx, rec.next, targetDynamoDB+"DescribeTable", map[string]string{"TableName": cur.table}, &out); err != nil {
			return err
		}
		if out.Table.LatestStreamArn == "" {
			return fmt.Errorf("the engine reports no stream for table %s", cur.table)
		}
		cur.streamARN = out.Table.LatestStreamArn
	}
	var desc struct {
		StreamDescription struct {
			Shards []struct{ ShardId string }
		}
	}
	if err := rec.engineCall(ctx, rec.next, targetStreams+"DescribeStream", map[string]string{"StreamArn": cur.streamARN}, &desc); err != nil {
		return err
	}
	shards := desc.StreamDescription.Shards
	sort.SliceStable(shards, func(i, j int) bool { return shards[i].ShardId < shards[j].ShardId })
	for _, sh := range shards {
		for {
			n, err := rec.readShard(ctx, cur, t, sh.ShardId)
			if err != nil {
				return err
			}
			if n < engineReadLimit {
				break
			}
		}
	}
	return nil
}

// engineReadLimit is the most records one read asks for (GetRecords' maximum).
const engineReadLimit = 1000

// readShard copies the records after the last one copied from a shard, up
// to engineReadLimit, and says how many it copied.
func (rec *Recorder) readShard(ctx context.Context, cur *engineCursor, t tableMeta, shardID string) (int, error) {
	in := map[string]string{"StreamArn": cur.streamARN, "ShardId": shardID, "ShardIteratorType": "TRIM_HORIZON"}
	if seq, ok := cur.last[shardID]; ok {
		in["ShardIteratorType"], in["SequenceNumber"] = "AFTER_SEQUENCE_NUMBER", seq
	}
	var out struct{ Records []engineRecord }
	var err error
	rec.exclusive(func(engine http.Handler) {
		var it struct{ ShardIterator string }
		if err = rec.engineCall(ctx, engine, targetStreams+"GetShardIterator", in, &it); err != nil {
			return
		}
		err = rec.engineCall(ctx, engine, targetStreams+"GetRecords", map[string]any{"ShardIterator": it.ShardIterator, "Limit": engineReadLimit}, &out)
	})
	if err != nil {
		return 0, err
	}
	evs := make([]events.DynamoDBEventRecord, 0, len(out.Records))
	for _, r := range out.Records {
		ev, err := r.event(t)
		if err != nil {
			return 0, fmt.Errorf("record %s: %w", r.EventID, err)
		}
		evs = append(evs, ev)
	}
	if len(evs) > 0 {
		rec.log.Append(t.streamARN(), evs...)
		cur.last[shardID] = out.Records[len(out.Records)-1].Dynamodb.SequenceNumber
	}
	return len(evs), nil
}

// engineRecord is a record as the engine's GetRecords returns it.
type engineRecord struct {
	EventID      string `json:"eventID"`
	EventName    string `json:"eventName"`
	EventVersion string `json:"eventVersion"`
	Dynamodb     struct {
		ApproximateCreationDateTime json.Number
		Keys                        map[string]events.DynamoDBAttributeValue
		NewImage                    map[string]events.DynamoDBAttributeValue
		OldImage                    map[string]events.DynamoDBAttributeValue
		SequenceNumber              string
		SizeBytes                   int64
		StreamViewType              string
	} `json:"dynamodb"`
}

// event converts an engine record to the log's form.
func (r engineRecord) event(t tableMeta) (events.DynamoDBEventRecord, error) {
	at := time.Now()
	if r.Dynamodb.ApproximateCreationDateTime != "" {
		secs, err := r.Dynamodb.ApproximateCreationDateTime.Float64()
		if err != nil {
			return events.DynamoDBEventRecord{}, fmt.Errorf("ApproximateCreationDateTime: %w", err)
		}
		whole, frac := math.Modf(secs)
		at = time.Unix(int64(whole), int64(frac*1e9))
	}
	view := r.Dynamodb.StreamViewType
	if view == "" {
		view = t.ViewType
	}
	version := r.EventVersion
	if version == "" {
		version = eventVersion
	}
	return events.DynamoDBEventRecord{
		AWSRegion: awsRegion,
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: at.Truncate(time.Second)},
			Keys:                        r.Dynamodb.Keys,
			NewImage:                    r.Dynamodb.NewImage,
			OldImage:                    r.Dynamodb.OldImage,
			SizeBytes:                   r.Dynamodb.SizeBytes,
			StreamViewType:              view,
		},
		EventID:      r.EventID,
		EventName:    r.EventName,
		EventSource:  eventSource,
		EventVersion: version,
	}, nil
}

// engineCall sends one request of the follower's own to the engine and
// decodes a 200 answer into out.
func (rec *Recorder) engineCall(ctx context.Context, engine http.Handler, target string, payload, out any) error {
	body, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentTypeJSON10)
	req.Header.Set("X-Amz-Target", target)
	req.Header.Set("Authorization", ownAuthorization)
	resp := newResponse()
	engine.ServeHTTP(resp, req)
	if !resp.ok() {
		return fmt.Errorf("%s: %s", target, bytes.TrimSpace(resp.body.Bytes()))
	}
	return json.Unmarshal(resp.body.Bytes(), out)
}
