// Package events is the contract of every message the Club backend publishes:
// the envelope shared by all events and jobs, the typed payloads, and the rules
// for reading them.
//
// # Envelope
//
// Every message is an [Envelope]:
//
//	{
//	  "event_id":       "6f1c…",                 // UUID, assigned once when the fact is recorded
//	  "type":           "enrollment.created",
//	  "schema_version": 2,                        // major version of the payload
//	  "aggregate_id":   "<enrollment id>",        // the business object the event is about
//	  "occurred_at":    "2026-03-01T10:00:00Z",   // RFC 3339, UTC
//	  "data":           { … }                     // the typed payload
//	}
//
// The event_id is permanent: the relay, the sweeper and a manual replay all
// deliver the same id, and consumers recognise a repeat by it (an inbox keyed on
// consumer and event_id). Events carry identifiers, never personal data: no
// e-mail address, no name. A consumer that needs an address reads it when it
// needs it (see the address policy in internal/club/profile).
//
// # Versions
//
// schema_version is a major version. Readers ship before writers: every reader
// accepts all versions listed by [Supported], and a writer switches to a new
// version only after every reader is deployed. [New] always writes the current
// version of a type. Within one version readers are tolerant: unknown fields in
// data are ignored. Every supported type and version has a stored example in
// events/examples (package examples), and the tests check that each example
// decodes and round-trips through the Go types.
//
// # Reading
//
// [Decode] validates an envelope completely, including its payload, and
// classifies every failure with one of three sentinels: [ErrMalformed],
// [ErrUnknownType] or [ErrUnsupportedVersion]. All three are permanent: the
// same bytes will fail the same way on every retry, so a consumer sends such a
// message to its dead-letter queue with the error text as the reason instead
// of retrying it. Typed accessors such as [Envelope.EnrollmentCreated] return
// the payload of a decoded envelope.
//
// # Fingerprints
//
// [Envelope.Fingerprint] hashes the content of an event (type, version,
// aggregate and data, canonicalised). An inbox stores it beside the event_id:
// the same id with the same fingerprint is a normal duplicate; the same id with
// a different fingerprint is a broken contract that a person must investigate.
//
// The package is pure (no I/O) and safe for concurrent use.
package events
