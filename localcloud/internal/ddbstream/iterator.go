package ddbstream

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// iteratorTTL is how long a shard iterator stays valid, as on AWS.
const iteratorTTL = 15 * time.Minute

// iteratorPrefix versions the iterator format.
const iteratorPrefix = "ddbstream.v1."

// shardIterator is a position in a stream: the reader has seen every record
// up to and including sequence number After. Its string form is opaque to
// clients.
type shardIterator struct {
	StreamARN string `json:"s"`
	After     uint64 `json:"a"`
	IssuedAt  int64  `json:"t"` // Unix nanoseconds
}

var errBadIterator = errors.New("malformed shard iterator")

func (it shardIterator) String() string {
	b, _ := json.Marshal(it) // strings and integers always marshal
	return iteratorPrefix + base64.RawURLEncoding.EncodeToString(b)
}

func parseIterator(s string) (shardIterator, error) {
	rest, ok := strings.CutPrefix(s, iteratorPrefix)
	if !ok {
		return shardIterator{}, errBadIterator
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return shardIterator{}, errBadIterator
	}
	var it shardIterator
	if err := json.Unmarshal(b, &it); err != nil || it.StreamARN == "" || it.IssuedAt == 0 {
		return shardIterator{}, errBadIterator
	}
	return it, nil
}

func (it shardIterator) expired(now time.Time) bool {
	return now.Sub(time.Unix(0, it.IssuedAt)) > iteratorTTL
}
