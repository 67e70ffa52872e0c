package events

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// The classification of every decoding failure. All three are permanent.
var (
	// ErrMalformed: the bytes are not a valid envelope, a required field is
	// missing or empty, or the payload does not match its type and version.
	ErrMalformed = errors.New("malformed event")
	// ErrUnknownType: the envelope is well formed but its type is not one this
	// build knows.
	ErrUnknownType = errors.New("unknown event type")
	// ErrUnsupportedVersion: the type is known but its schema_version is not one
	// this build can read (typically a writer that shipped before its readers).
	ErrUnsupportedVersion = errors.New("unsupported event schema version")
	// ErrWrongType is returned by a typed accessor called on an envelope of
	// another type: a programming error in the consumer, not a bad message.
	ErrWrongType = errors.New("event is of another type")
)

// Envelope is one event or job as it is stored in the outbox and delivered to
// consumers. Build one with [New] or [Decode]; an Envelope built by hand is
// not validated.
type Envelope struct {
	EventID       string          `json:"event_id"`
	Type          Type            `json:"type"`
	SchemaVersion int             `json:"schema_version"`
	AggregateID   string          `json:"aggregate_id"`
	OccurredAt    time.Time       `json:"occurred_at"`
	Data          json.RawMessage `json:"data"`
}

// NewID returns a new event id (a random UUID). Call it once, when the fact is
// recorded, and store the id with the event: retries must reuse it.
func NewID() string { return uuid.NewString() }

// New builds an envelope for a payload at the current version of its type.
// occurredAt is converted to UTC. The payload is validated as [Decode] would
// validate it, so what New produces every reader accepts.
func New(eventID string, occurredAt time.Time, p Payload) (Envelope, error) {
	if _, err := uuid.Parse(eventID); err != nil {
		return Envelope{}, fmt.Errorf("new %s event: event id %q is not a UUID: %w", p.EventType(), eventID, err)
	}
	if occurredAt.IsZero() {
		return Envelope{}, fmt.Errorf("new %s event: occurred_at is zero", p.EventType())
	}
	s, ok := registry[p.EventType()]
	if !ok {
		return Envelope{}, fmt.Errorf("new event: %w: %q", ErrUnknownType, p.EventType())
	}
	if err := p.validate(); err != nil {
		return Envelope{}, fmt.Errorf("new %s event: %w", p.EventType(), err)
	}
	data, err := json.Marshal(p)
	if err != nil {
		return Envelope{}, fmt.Errorf("new %s event: encode data: %w", p.EventType(), err)
	}
	return Envelope{
		EventID:       eventID,
		Type:          p.EventType(),
		SchemaVersion: s.current,
		AggregateID:   p.AggregateID(),
		OccurredAt:    occurredAt.UTC(),
		Data:          data,
	}, nil
}

// wireEnvelope mirrors Envelope with pointers so that Decode can tell a missing
// field from a zero value.
type wireEnvelope struct {
	EventID       *string         `json:"event_id"`
	Type          *string         `json:"type"`
	SchemaVersion *int            `json:"schema_version"`
	AggregateID   *string         `json:"aggregate_id"`
	OccurredAt    *string         `json:"occurred_at"`
	Data          json.RawMessage `json:"data"`
}

// Decode parses and validates an envelope and its payload. Every error wraps
// exactly one of [ErrMalformed], [ErrUnknownType] or [ErrUnsupportedVersion],
// and its text says what is wrong (it is meant to travel with the message to
// a dead-letter queue). The checks run in this order: JSON syntax and required
// envelope fields, type, version, payload; so an unknown type is reported as
// such even if its payload would not parse.
func Decode(b []byte) (Envelope, error) {
	var w wireEnvelope
	if err := json.Unmarshal(b, &w); err != nil {
		return Envelope{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	switch {
	case w.EventID == nil || *w.EventID == "":
		return Envelope{}, fmt.Errorf("%w: missing event_id", ErrMalformed)
	case w.Type == nil || *w.Type == "":
		return Envelope{}, fmt.Errorf("%w: missing type", ErrMalformed)
	case w.SchemaVersion == nil:
		return Envelope{}, fmt.Errorf("%w: missing schema_version", ErrMalformed)
	case w.AggregateID == nil || *w.AggregateID == "":
		return Envelope{}, fmt.Errorf("%w: missing aggregate_id", ErrMalformed)
	case w.OccurredAt == nil || *w.OccurredAt == "":
		return Envelope{}, fmt.Errorf("%w: missing occurred_at", ErrMalformed)
	case len(w.Data) == 0 || bytes.Equal(w.Data, []byte("null")):
		return Envelope{}, fmt.Errorf("%w: missing data", ErrMalformed)
	}
	if _, err := uuid.Parse(*w.EventID); err != nil {
		return Envelope{}, fmt.Errorf("%w: event_id %q is not a UUID", ErrMalformed, *w.EventID)
	}
	occurredAt, err := time.Parse(time.RFC3339Nano, *w.OccurredAt)
	if err != nil {
		return Envelope{}, fmt.Errorf("%w: occurred_at %q is not RFC 3339", ErrMalformed, *w.OccurredAt)
	}
	env := Envelope{
		EventID:       *w.EventID,
		Type:          Type(*w.Type),
		SchemaVersion: *w.SchemaVersion,
		AggregateID:   *w.AggregateID,
		OccurredAt:    occurredAt.UTC(),
		Data:          w.Data,
	}
	if _, err := env.Payload(); err != nil {
		return Envelope{}, err
	}
	return env, nil
}

// Payload decodes and validates the data of the envelope according to its type
// and version, returning the typed payload (for example an [EnrollmentCreated]
// value). Errors are classified as in [Decode].
func (e Envelope) Payload() (Payload, error) {
	s, ok := registry[e.Type]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownType, e.Type)
	}
	if !s.supports(e.SchemaVersion) {
		return nil, fmt.Errorf("%w: %s version %d (supported: %v)", ErrUnsupportedVersion, e.Type, e.SchemaVersion, s.versions)
	}
	p, err := s.decode(e.Data, e.SchemaVersion)
	if err != nil {
		return nil, fmt.Errorf("%w: %s v%d data: %v", ErrMalformed, e.Type, e.SchemaVersion, err)
	}
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("%w: %s v%d data: %v", ErrMalformed, e.Type, e.SchemaVersion, err)
	}
	if p.AggregateID() != e.AggregateID {
		return nil, fmt.Errorf("%w: %s aggregate_id %q does not match its data (%q)", ErrMalformed, e.Type, e.AggregateID, p.AggregateID())
	}
	return p, nil
}

// Fingerprint returns the SHA-256 (hex) of the canonical JSON of the event's
// type, schema version, aggregate id and data. event_id and occurred_at are
// not part of it: the fingerprint answers "is this the same content?" for two
// deliveries that share an event_id. Canonical JSON sorts object keys and drops
// insignificant whitespace, so key order and formatting do not matter.
//
// For an envelope that did not come from [New] or [Decode] and whose data is
// not valid JSON, the raw data bytes are hashed instead; such an envelope never
// matches a valid one.
func (e Envelope) Fingerprint() string {
	data, err := canonicalJSON(e.Data)
	if err != nil {
		data = e.Data
	}
	content, err := json.Marshal(struct {
		Type          Type            `json:"type"`
		SchemaVersion int             `json:"schema_version"`
		AggregateID   string          `json:"aggregate_id"`
		Data          json.RawMessage `json:"data"`
	}{e.Type, e.SchemaVersion, e.AggregateID, data})
	if err != nil {
		// Only reachable with invalid raw data; hash it as bytes.
		content = append([]byte(string(e.Type)+"\x00"+e.AggregateID+"\x00"), e.Data...)
	}
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}

// canonicalJSON re-encodes a JSON document with sorted object keys and no
// insignificant whitespace. Numbers keep their literal text.
func canonicalJSON(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after JSON value")
	}
	// encoding/json writes map keys in sorted order.
	return json.Marshal(v)
}

// EnrollmentCreated returns the payload of an enrollment.created envelope.
func (e Envelope) EnrollmentCreated() (EnrollmentCreated, error) {
	return payloadAs[EnrollmentCreated](e, TypeEnrollmentCreated)
}

// EnrollmentCancelled returns the payload of an enrollment.cancelled envelope.
func (e Envelope) EnrollmentCancelled() (EnrollmentCancelled, error) {
	return payloadAs[EnrollmentCancelled](e, TypeEnrollmentCancelled)
}

// PurchaseRequested returns the payload of a purchase.requested envelope.
func (e Envelope) PurchaseRequested() (PurchaseRequested, error) {
	return payloadAs[PurchaseRequested](e, TypePurchaseRequested)
}

// RefundRequested returns the payload of a refund.requested envelope.
func (e Envelope) RefundRequested() (RefundRequested, error) {
	return payloadAs[RefundRequested](e, TypeRefundRequested)
}

// ExportRequested returns the payload of an export.requested envelope.
func (e Envelope) ExportRequested() (ExportRequested, error) {
	return payloadAs[ExportRequested](e, TypeExportRequested)
}

func payloadAs[P Payload](e Envelope, t Type) (P, error) {
	var zero P
	if e.Type != t {
		return zero, fmt.Errorf("%w: envelope %s has type %q, not %q", ErrWrongType, e.EventID, e.Type, t)
	}
	p, err := e.Payload()
	if err != nil {
		return zero, err
	}
	return p.(P), nil
}
