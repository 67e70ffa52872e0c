package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/clubdev/club/internal/club"
)

// Limits of a key (docs/principles.md §5).
const (
	MinKeyLength = 8
	MaxKeyLength = 128
)

// DefaultRetention is how long a record is kept: longer than any client's
// retry window, short enough that the table does not grow without bound.
const DefaultRetention = 24 * time.Hour

// ValidateKey checks a client's key: 8 to 128 visible ASCII characters (no
// spaces or control characters). The error wraps club.ErrIdempotencyKeyRequired.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: the Idempotency-Key header is missing", club.ErrIdempotencyKeyRequired)
	}
	if len(key) < MinKeyLength || len(key) > MaxKeyLength {
		return fmt.Errorf("%w: the key must be %d to %d characters", club.ErrIdempotencyKeyRequired, MinKeyLength, MaxKeyLength)
	}
	for i := range len(key) {
		if key[i] < '!' || key[i] > '~' {
			return fmt.Errorf("%w: the key may contain only visible ASCII characters", club.ErrIdempotencyKeyRequired)
		}
	}
	return nil
}

// Fingerprint identifies a request for idempotency: the same fingerprint means
// the same request. body must be valid JSON or empty (the API rejects invalid
// JSON first); an empty body counts as "{}". Fields are length-prefixed before
// hashing so that no two different requests can produce the same input.
func Fingerprint(method, path string, body []byte, caller string) (string, error) {
	canonical, err := canonicalBody(body)
	if err != nil {
		return "", fmt.Errorf("fingerprint %s %s: %w", method, path, err)
	}
	h := sha256.New()
	for _, field := range [][]byte{[]byte(method), []byte(path), canonical, []byte(caller)} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(field)))
		h.Write(n[:])
		h.Write(field)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func canonicalBody(body []byte) ([]byte, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return []byte("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // keep numbers as written: 1 and 1.0 are different requests
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("body is not JSON: %w", err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("body has data after the JSON value")
	}
	return json.Marshal(v) // sorted keys, no whitespace
}

// Response is what the API answered the first time.
type Response struct {
	Status int
	Body   []byte
}

// Record is a stored idempotent request.
type Record struct {
	Caller      string // the user who sent the request (the key's scope)
	Key         string
	Fingerprint string
	Response    Response
	// ResourceID is the id of what the request created (for operators).
	ResourceID string
	CreatedAt  time.Time
}

// Replay returns the stored response if fingerprint is the one stored, and
// club.ErrIdempotencyKeyReused otherwise.
func (r Record) Replay(fingerprint string) (Response, error) {
	if r.Fingerprint != fingerprint {
		return Response{}, fmt.Errorf("key %q of caller %q: %w", r.Key, r.Caller, club.ErrIdempotencyKeyReused)
	}
	return r.Response, nil
}

// ExistsError is returned by a store whose write lost to an existing record
// with the same caller and key (a concurrent or earlier request). It carries
// that record so that the caller can replay or refuse without another read.
type ExistsError struct {
	Record Record
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("idempotency record for key %q of caller %q already exists", e.Record.Key, e.Record.Caller)
}

// Store reads records. Records are written by the transaction of the request
// they protect (for example enrollment.Store.Create), never alone.
type Store interface {
	// Get returns the record of caller and key, or club.ErrNotFound.
	Get(ctx context.Context, caller, key string) (Record, error)
}
