package ddbstream

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-lambda-go/events"
)

// Record is one stream record. Seq is its position in the stream (1, 2, ...);
// Event.Change.SequenceNumber carries the same number in the wire format
// (SequenceString).
type Record struct {
	Seq   uint64
	Event events.DynamoDBEventRecord
}

// SequenceString formats a sequence number the way the Streams API returns
// it: a fixed-width decimal string, so that string order is numeric order.
func SequenceString(seq uint64) string { return fmt.Sprintf("%021d", seq) }

// Log holds the records of every stream of the local cloud, in commit order
// per stream. It is safe for concurrent use. Records are kept for the life of
// the process (the 24-hour retention of AWS is not enforced).
type Log struct {
	mu      sync.Mutex
	streams map[string]*stream // by stream ARN
	journal Journal            // nil: in memory only (persist.go)
}

type stream struct {
	records []Record
	wake    chan struct{} // closed and replaced on every append
	info    StreamInfo    // what DescribeStream reports; see catalog.go
}

// NewLog returns an empty log.
func NewLog() *Log { return &Log{streams: map[string]*stream{}} }

// Register creates the stream with the given ARN if it does not exist yet.
func (l *Log) Register(streamARN string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.streamLocked(streamARN)
}

// Has reports whether a stream with this ARN is registered.
func (l *Log) Has(streamARN string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.streams[streamARN]
	return ok
}

func (l *Log) streamLocked(arn string) *stream {
	s, ok := l.streams[arn]
	if !ok {
		s = &stream{wake: make(chan struct{}), info: infoFromARN(arn)}
		l.streams[arn] = s
		l.described(s)
	}
	return s
}

// Append adds records to a stream, assigning consecutive sequence numbers, and
// returns them. All records of one call get adjacent numbers, so a transaction
// appended in one call is never interleaved with another write.
func (l *Log) Append(streamARN string, evs ...events.DynamoDBEventRecord) []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.streamLocked(streamARN)
	out := make([]Record, 0, len(evs))
	for _, ev := range evs {
		seq := uint64(len(s.records)) + 1
		ev.Change.SequenceNumber = SequenceString(seq)
		ev.EventSourceArn = streamARN
		r := Record{Seq: seq, Event: ev}
		s.records = append(s.records, r)
		out = append(out, r)
	}
	if l.journal != nil {
		l.journal.Append(streamARN, out)
	}
	close(s.wake)
	s.wake = make(chan struct{})
	return out
}

// Latest returns the sequence number of the newest record (0 when empty).
func (l *Log) Latest(streamARN string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.streams[streamARN]; ok {
		return uint64(len(s.records))
	}
	return 0
}

// Read returns up to limit records with a sequence number greater than after.
// If there are none it waits until one is appended or ctx is done; then it
// returns an empty slice and ctx.Err().
func (l *Log) Read(ctx context.Context, streamARN string, after uint64, limit int) ([]Record, error) {
	for {
		l.mu.Lock()
		s, ok := l.streams[streamARN]
		if !ok {
			l.mu.Unlock()
			return nil, fmt.Errorf("stream %s: %w", streamARN, ErrNoSuchStream)
		}
		if after < uint64(len(s.records)) {
			end := min(uint64(len(s.records)), after+uint64(limit))
			out := append([]Record(nil), s.records[after:end]...)
			l.mu.Unlock()
			return out, nil
		}
		wake := s.wake
		l.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Wait returns once the stream holds a record with a sequence number greater
// than after, at once if it already does, or ctx.Err() when ctx is done
// first. It reads nothing.
func (l *Log) Wait(ctx context.Context, streamARN string, after uint64) error {
	l.mu.Lock()
	s, ok := l.streams[streamARN]
	if !ok {
		l.mu.Unlock()
		return fmt.Errorf("stream %s: %w", streamARN, ErrNoSuchStream)
	}
	for after >= uint64(len(s.records)) {
		wake := s.wake
		l.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
		l.mu.Lock()
	}
	l.mu.Unlock()
	return nil
}

// ErrNoSuchStream is returned for a stream ARN the log does not know.
var ErrNoSuchStream = fmt.Errorf("no such stream")

// streamLabel is the label of every local stream ARN. Stream ARNs are derived
// from the table ARN so that templates can reference them (!GetAtt T.StreamArn)
// before the table exists; a real stream label is the creation timestamp.
const streamLabel = "2026-01-01T00:00:00.000"

// StreamARN returns the ARN of the stream of the table with the given ARN.
func StreamARN(tableARN string) string { return tableARN + "/stream/" + streamLabel }
