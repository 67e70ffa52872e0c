package ddbstream

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// KeyElement is one attribute of a table's primary key, as in the KeySchema
// of DescribeTable and DescribeStream.
type KeyElement struct {
	AttributeName string `json:"AttributeName"`
	KeyType       string `json:"KeyType"` // HASH or RANGE
}

// Stream view types (StreamSpecification.StreamViewType).
const (
	ViewKeysOnly        = "KEYS_ONLY"
	ViewNewImage        = "NEW_IMAGE"
	ViewOldImage        = "OLD_IMAGE"
	ViewNewAndOldImages = "NEW_AND_OLD_IMAGES"
)

// validViewType reports whether v is one of the four stream view types.
func validViewType(v string) bool {
	switch v {
	case ViewKeysOnly, ViewNewImage, ViewOldImage, ViewNewAndOldImages:
		return true
	}
	return false
}

// StreamInfo describes one stream: what ListStreams and DescribeStream
// report besides its records.
type StreamInfo struct {
	StreamARN string
	TableName string
	Label     string
	ViewType  string
	KeySchema []KeyElement
	// Enabled is false once the table's stream was disabled or the table
	// deleted: the shard is then closed, its records stay readable.
	Enabled   bool
	CreatedAt time.Time
}

// infoFromARN is the description of a stream known only by its ARN (see
// Register): everything that can be read from
// arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>.
func infoFromARN(arn string) StreamInfo {
	info := StreamInfo{StreamARN: arn, Enabled: true, CreatedAt: time.Now()}
	if _, rest, ok := strings.Cut(arn, ":table/"); ok {
		info.TableName, info.Label, _ = strings.Cut(rest, "/stream/")
	}
	return info
}

// Enable registers the stream described by info if needed, replaces its
// description and opens it. Records already in the stream are kept, so a
// stream that is disabled and enabled again continues its sequence numbers
// (on AWS it would be a new stream with a new label; local stream ARNs are
// fixed, see StreamARN).
func (l *Log) Enable(info StreamInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.streamLocked(info.StreamARN)
	if info.CreatedAt.IsZero() {
		info.CreatedAt = s.info.CreatedAt
	}
	info.Enabled = true
	s.info = info
	l.described(s)
}

// Disable closes the stream: it accepts no more records from the recorder
// and readers that reach its end get no further iterator. Unknown streams
// are ignored.
func (l *Log) Disable(streamARN string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.streams[streamARN]; ok {
		s.info.Enabled = false
		l.described(s)
	}
}

// Info returns the description of a stream.
func (l *Log) Info(streamARN string) (StreamInfo, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.streams[streamARN]
	if !ok {
		return StreamInfo{}, false
	}
	return s.info, true
}

// Streams returns the descriptions of all streams, ordered by ARN.
func (l *Log) Streams() []StreamInfo {
	l.mu.Lock()
	out := make([]StreamInfo, 0, len(l.streams))
	for _, s := range l.streams {
		out = append(out, s.info)
	}
	l.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].StreamARN < out[j].StreamARN })
	return out
}

// Since returns up to limit records with a sequence number greater than
// after, without waiting: an empty slice means the reader is at the end.
func (l *Log) Since(streamARN string, after uint64, limit int) ([]Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.streams[streamARN]
	if !ok {
		return nil, fmt.Errorf("stream %s: %w", streamARN, ErrNoSuchStream)
	}
	n := uint64(len(s.records))
	if after >= n || limit <= 0 {
		return nil, nil
	}
	end := min(n, after+uint64(limit))
	return append([]Record(nil), s.records[after:end]...), nil
}
