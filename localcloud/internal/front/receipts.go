package front

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/clubdev/club/localcloud/internal/httptee"
)

// ReceiveTokenHeader is the header with which a caller of SQS ReceiveMessage
// asks the endpoint to remember the receipt handles of its answer under a
// token of its choosing. If the answer then fails to reach the caller — a
// connection cut while the body is read, which leaves the caller holding no
// handle — ReleaseReceive makes the messages visible again at once, instead
// of after the queue's visibility timeout (minutes in the template). The
// event source mappings' pollers send it; other callers need not.
const ReceiveTokenHeader = "X-Club-Receive-Token"

const (
	// receiptsTTL is how long the handles of an answer are kept: a caller
	// releases within moments of its failure, or never.
	receiptsTTL = 2 * time.Minute
	// maxReceipts bounds the ledger whatever the callers do.
	maxReceipts = 20000
	// maxAnswerBytes bounds the answer kept for parsing: ten messages of at
	// most 256 KiB each, with their attributes.
	maxAnswerBytes = 4 << 20
)

// receipts is the ledger of the answers given to ReceiveMessage calls that
// carried ReceiveTokenHeader.
type receipts struct {
	// sqs calls kumo directly (not through the front) to release handles.
	sqs *sqs.Client
	now func() time.Time

	mu      sync.Mutex
	byToken map[string]*receiveRecord
	order   []string // tokens in arrival order, for expiry
	stats   ReceiptStats
}

// receiveRecord is one answer: pending until the answer has been written.
type receiveRecord struct {
	at       time.Time
	done     chan struct{}
	queueURL string
	handles  []string
	// writeFailed says the front could not write the answer: the caller
	// cannot have the handles, whether or not it asks.
	writeFailed bool
}

// ReceiptStats counts what the ledger did since the front started.
type ReceiptStats struct {
	// Recorded answers; Released receives and the messages they made
	// visible again; WriteFailures, answers the front could not write.
	Recorded, Released, ReleasedMessages, WriteFailures int64
}

func newReceipts(kumoURL string, cfg aws.Config) *receipts {
	cfg.BaseEndpoint = aws.String(kumoURL)
	return &receipts{sqs: sqs.NewFromConfig(cfg), now: time.Now, byToken: map[string]*receiveRecord{}}
}

// serve passes a tagged ReceiveMessage to next, keeping a copy of the
// answer, and records the answer's receipt handles under token.
func (rc *receipts) serve(next http.Handler, w http.ResponseWriter, r *http.Request, token string) {
	body, ok := peekBody(w, r)
	if !ok {
		return
	}
	var in struct{ QueueUrl string }
	_ = json.Unmarshal(body, &in) // a malformed call is kumo's to refuse

	rec := rc.begin(token)
	tee := httptee.New(w, maxAnswerBytes)
	defer func() {
		rc.finish(rec, in.QueueUrl, tee)
		if rec.writeFailed {
			// The caller cannot have the handles: release without waiting
			// to be asked. Detached from r, which is over.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
			defer cancel()
			_, _ = rc.release(ctx, token)
		}
	}()
	next.ServeHTTP(tee, r)
}

// maxFormBytes bounds a request body the front reads into memory.
const maxFormBytes = 1 << 20

// peekBody reads r's body for the front to look at and leaves r able to
// give it again to the handler after it. On a failed read it answers 400
// and returns false.
func peekBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxFormBytes))
	if err != nil {
		http.Error(w, "read request: "+err.Error(), http.StatusBadRequest)
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

func (rc *receipts) begin(token string) *receiveRecord {
	rec := &receiveRecord{at: rc.now(), done: make(chan struct{})}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.expireLocked()
	// A reused token replaces the older answer: the newer is the one its
	// caller can still lose.
	rc.byToken[token] = rec
	rc.order = append(rc.order, token)
	return rec
}

// finish records the handles of the answer written through tee.
func (rc *receipts) finish(rec *receiveRecord, queueURL string, tee *httptee.Writer) {
	defer close(rec.done)
	rec.queueURL = queueURL
	rec.writeFailed = tee.Err != nil
	if tee.Status() == http.StatusOK {
		var out struct {
			Messages []struct{ ReceiptHandle string }
		}
		if json.Unmarshal(tee.Body.Bytes(), &out) == nil {
			for _, m := range out.Messages {
				if m.ReceiptHandle != "" {
					rec.handles = append(rec.handles, m.ReceiptHandle)
				}
			}
		}
	}
	rc.mu.Lock()
	rc.stats.Recorded++
	if rec.writeFailed {
		rc.stats.WriteFailures++
	}
	rc.mu.Unlock()
}

// expireLocked drops records past receiptsTTL, and the oldest beyond
// maxReceipts; an answer still being written is kept, with all after it.
func (rc *receipts) expireLocked() {
	cutoff := rc.now().Add(-receiptsTTL)
	drop := 0
	for ; drop < len(rc.order); drop++ {
		tok := rc.order[drop]
		rec, ok := rc.byToken[tok]
		if !ok {
			continue // released already
		}
		if rec.at.After(cutoff) && len(rc.order)-drop <= maxReceipts {
			break
		}
		select {
		case <-rec.done:
			delete(rc.byToken, tok)
		default:
			rc.order = rc.order[drop:]
			return
		}
	}
	rc.order = rc.order[drop:]
}

// release makes the messages of the answer recorded under token visible
// again and forgets it. It waits for an answer still being written, so a
// caller that saw its answer fail may ask at once. An unknown token (an
// answer never recorded, or already released or expired) releases nothing.
func (rc *receipts) release(ctx context.Context, token string) (int, error) {
	rc.mu.Lock()
	rec, ok := rc.byToken[token]
	if ok {
		delete(rc.byToken, token)
	}
	rc.mu.Unlock()
	if !ok {
		return 0, nil
	}
	select {
	case <-rec.done:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	released := 0
	var errs []error
	for start := 0; start < len(rec.handles); start += 10 {
		chunk := rec.handles[start:min(start+10, len(rec.handles))]
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for i, h := range chunk {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(h), VisibilityTimeout: 0}
		}
		out, err := rc.sqs.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(rec.queueURL), Entries: entries})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		released += len(out.Successful)
		for _, f := range out.Failed {
			// A handle already deleted or expired: nothing to release.
			errs = append(errs, fmt.Errorf("%s: %s", aws.ToString(f.Code), aws.ToString(f.Message)))
		}
	}
	rc.mu.Lock()
	rc.stats.Released++
	rc.stats.ReleasedMessages += int64(released)
	rc.mu.Unlock()
	return released, errors.Join(errs...)
}

func (rc *receipts) snapshot() ReceiptStats {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.stats
}
