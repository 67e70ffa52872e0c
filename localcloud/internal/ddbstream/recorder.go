package ddbstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Recorder is the DynamoDB front of the local cloud: an http.Handler for
// every DynamoDB request (X-Amz-Target: DynamoDB_20120810.*) that forwards
// it to the emulator and appends a stream record to the Log for every item
// a write changes in a stream-enabled table.
//
// Writes to stream-enabled tables (PutItem, UpdateItem, DeleteItem,
// BatchWriteItem, TransactWriteItems) are serialised by one lock, so the
// order of records in a stream is the order in which the writes committed.
// Writes to other tables, and all reads, pass through without it.
type Recorder struct {
	log    *Log
	next   http.Handler
	tables *tableSet
	tokens *tokenStore
	now    func() time.Time
	logger *slog.Logger
	// engineRecords, exclusive: see WithEngineRecords.
	engineRecords bool
	exclusive     func(fn func(engine http.Handler))

	// writeMu is held across read-old-images, write, read-new-images of
	// each recorded write: nothing else can change a stream-enabled table
	// in between, so the images are exactly before and after the write.
	// (Items a Put creates, conditional on attribute_not_exists of a key
	// attribute, need no reading: see createsOnly. Every enrollment's
	// outbox insert is one, so the lock is held for one emulator call
	// instead of three.)
	writeMu sync.Mutex
}

var _ http.Handler = (*Recorder)(nil)

// NewRecorder returns a Recorder that appends to log and forwards every
// request to next, which must reach the emulator's DynamoDB (typically a
// reverse proxy).
func NewRecorder(log *Log, next http.Handler, opts ...Option) *Recorder {
	s := newSettings(opts)
	return &Recorder{
		log:    log,
		next:   next,
		tables: newTableSet(),
		tokens: newTokenStore(s.now),
		now:    s.now,
		logger: s.logger,

		engineRecords: s.engineRecords,
		exclusive:     s.exclusive,
	}
}

// ServeHTTP answers one DynamoDB request with what the emulator answered,
// corrected where the emulator deviates from AWS in ways clients notice: the
// X-Amz-Crc32 header, the table's stream fields, TransactWriteItems
// cancellation reasons and ClientRequestToken idempotency.
func (rec *Recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), targetDynamoDB)
	ctx := r.Context()
	var resp *response
	switch op {
	case "CreateTable":
		resp, err = rec.createTable(ctx, r, body)
	case "UpdateTable":
		resp, err = rec.updateTable(ctx, r, body)
	case "DeleteTable":
		resp, err = rec.deleteTable(ctx, r, body)
	case "DescribeTable":
		resp, err = rec.describeTable(ctx, r, body)
	case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem":
		resp, err = rec.write(ctx, r, op, body)
	case "TransactWriteItems":
		resp, err = rec.transactWrite(ctx, r, body)
	default:
		resp = rec.forward(ctx, r, body)
	}
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			rec.logger.Error("dynamodb request failed in the local cloud", "op", op, "err", err)
		}
		writeError(w, err)
		return
	}
	resp.writeTo(w)
}

// forward sends the client's request, with body, to the emulator.
func (rec *Recorder) forward(ctx context.Context, r *http.Request, body []byte) *response {
	out := r.Clone(ctx)
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = nil
	resp := newResponse()
	rec.next.ServeHTTP(resp, out)
	return resp
}

// call sends a request of the recorder's own (reading images, describing a
// table) to the emulator, addressed like the client's request r.
func (rec *Recorder) call(ctx context.Context, r *http.Request, op string, payload any) (*response, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", op, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", op, err)
	}
	req.Host = r.Host
	req.Header.Set("Content-Type", contentTypeJSON10)
	req.Header.Set("X-Amz-Target", targetDynamoDB+op)
	req.Header.Set("Authorization", ownAuthorization)
	resp := newResponse()
	rec.next.ServeHTTP(resp, req)
	return resp, nil
}

// write forwards a write and records the changes it made to items of
// stream-enabled tables.
//
// The new images are read whatever the emulator answered, and an item that
// did not change gets no record: a failed conditional write or a cancelled
// transaction changes nothing and so records nothing, and a partly applied
// BatchWriteItem (kumo validates its items one by one) records exactly what
// was applied.
func (rec *Recorder) write(ctx context.Context, r *http.Request, op string, body []byte) (*response, error) {
	if rec.engineRecords {
		return rec.forward(ctx, r, body), nil
	}
	targets, err := writeTargets(op, body)
	if err != nil {
		return rec.forward(ctx, r, body), nil // kumo answers the malformed request
	}
	writes, err := rec.streamWrites(ctx, r, targets)
	if err != nil {
		return nil, err
	}
	if len(writes) == 0 {
		return rec.forward(ctx, r, body), nil
	}

	// Once the write is sent the records must be written even if the
	// client gives up: the write may have committed.
	ctx = context.WithoutCancel(ctx)
	rec.writeMu.Lock()
	defer rec.writeMu.Unlock()
	before, err := rec.imagesAround(ctx, r, writes, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: read old images: %w", op, err)
	}
	resp := rec.forward(ctx, r, body)
	after, err := rec.imagesAround(ctx, r, writes, resp)
	if err != nil {
		// The write may have committed: answer what kumo answered, and
		// say loudly that its stream records are missing.
		rec.logger.Error("stream records lost: cannot read new images", "op", op, "err", err)
		return resp, nil
	}
	rec.appendRecords(op, writes, before, after)
	return resp, nil
}

// streamWrites keeps the targets that belong to stream-enabled tables, with
// their keys, dropping repeated items (AWS rejects a request that writes one
// item twice; kumo applies it, and the images then show the net change).
func (rec *Recorder) streamWrites(ctx context.Context, r *http.Request, targets []target) ([]itemWrite, error) {
	var writes []itemWrite
	seen := map[string]int{} // identity → index in writes
	for _, tg := range targets {
		t, known, err := rec.table(ctx, r, tg.table)
		if err != nil {
			return nil, err
		}
		if !known || !t.streaming() {
			continue
		}
		attrs, ok := tg.attributes()
		if !ok {
			continue // kumo rejects attributes that are not an object
		}
		key, ok := keyOf(t, attrs)
		if !ok {
			continue // kumo rejects an incomplete key; nothing to record
		}
		w := itemWrite{table: t, key: key}
		if createsOnly(t, tg.condition) {
			b, err := json.Marshal(attrs) // sorted and compact, as kumo renders items
			if err != nil {
				return nil, fmt.Errorf("encode item: %w", err)
			}
			w.created = image(b)
		}
		id := w.identity()
		if i, dup := seen[id]; dup {
			// Two writes to one item: only reading shows what it became.
			writes[i].created = nil
			continue
		}
		seen[id] = len(writes)
		writes = append(writes, w)
	}
	return writes, nil
}

// imagesAround returns the image of each write before the request (resp
// nil) or after it: read from the emulator, except for the items a Put
// creates (itemWrite.created), which had none before and, if the request
// succeeded, are exactly what was put. A failed request wrote nothing.
func (rec *Recorder) imagesAround(ctx context.Context, r *http.Request, writes []itemWrite, resp *response) ([]image, error) {
	var unknown []itemWrite
	for _, w := range writes {
		if w.created == nil {
			unknown = append(unknown, w)
		}
	}
	var read []image
	if len(unknown) > 0 {
		var err error
		if read, err = rec.images(ctx, r, unknown); err != nil {
			return nil, err
		}
	}
	out := make([]image, len(writes))
	for i, w := range writes {
		switch {
		case w.created == nil:
			out[i], read = read[0], read[1:]
		case resp != nil && resp.ok():
			out[i] = w.created
		}
	}
	return out, nil
}

// maxTransactGet is the most items one TransactGetItems may read.
const maxTransactGet = 100

// images reads the current image of each item with a consistent read: one
// GetItem for a single item, TransactGetItems (in request order) for more.
func (rec *Recorder) images(ctx context.Context, r *http.Request, writes []itemWrite) ([]image, error) {
	if len(writes) == 1 {
		resp, err := rec.call(ctx, r, "GetItem", map[string]any{
			"TableName":      writes[0].table.Name,
			"Key":            writes[0].key,
			"ConsistentRead": true,
		})
		if err != nil {
			return nil, err
		}
		if !resp.ok() {
			return nil, fmt.Errorf("GetItem: HTTP %d: %s", resp.status, resp.body.Bytes())
		}
		var out struct {
			Item json.RawMessage `json:"Item"`
		}
		if err := json.Unmarshal(resp.body.Bytes(), &out); err != nil {
			return nil, fmt.Errorf("decode GetItem: %w", err)
		}
		return []image{image(out.Item)}, nil
	}

	type get struct {
		TableName string                     `json:"TableName"`
		Key       map[string]json.RawMessage `json:"Key"`
	}
	type getItem struct {
		Get get `json:"Get"`
	}
	out := make([]image, 0, len(writes))
	for start := 0; start < len(writes); start += maxTransactGet {
		chunk := writes[start:min(len(writes), start+maxTransactGet)]
		items := make([]getItem, len(chunk))
		for i, w := range chunk {
			items[i] = getItem{get{w.table.Name, w.key}}
		}
		resp, err := rec.call(ctx, r, "TransactGetItems", map[string]any{"TransactItems": items})
		if err != nil {
			return nil, err
		}
		if !resp.ok() {
			return nil, fmt.Errorf("TransactGetItems: HTTP %d: %s", resp.status, resp.body.Bytes())
		}
		var got struct {
			Responses []struct {
				Item json.RawMessage `json:"Item"`
			} `json:"Responses"`
		}
		if err := json.Unmarshal(resp.body.Bytes(), &got); err != nil {
			return nil, fmt.Errorf("decode TransactGetItems: %w", err)
		}
		if len(got.Responses) != len(chunk) {
			return nil, fmt.Errorf("TransactGetItems: %d responses for %d items", len(got.Responses), len(chunk))
		}
		for _, g := range got.Responses {
			out = append(out, image(g.Item))
		}
	}
	return out, nil
}

// appendRecords appends the records of one write request: one Log.Append
// per stream, so that the records of a batch or transaction are adjacent and
// in request order. The caller holds writeMu.
func (rec *Recorder) appendRecords(op string, writes []itemWrite, before, after []image) {
	at := rec.now()
	var order []string // stream ARNs in the order of their first record
	byStream := map[string][]events.DynamoDBEventRecord{}
	for i, w := range writes {
		ev, changed, err := newRecord(w, before[i], after[i], at)
		if err != nil {
			rec.logger.Error("stream record lost: cannot convert images", "op", op, "table", w.table.Name, "err", err)
			continue
		}
		if !changed {
			continue
		}
		arn := w.table.streamARN()
		if _, ok := byStream[arn]; !ok {
			order = append(order, arn)
		}
		byStream[arn] = append(byStream[arn], ev)
	}
	for _, arn := range order {
		rec.log.Append(arn, byStream[arn]...)
	}
}
