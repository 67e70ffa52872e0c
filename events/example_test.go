package events_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/clubdev/club/events"
)

// A producer builds an envelope once, in the transaction that records the
// fact, and stores it; every later delivery reuses its event_id.
func ExampleNew() {
	starts := time.Date(2026, 3, 15, 17, 0, 0, 0, time.UTC)
	env, err := events.New("3c1d2e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
		time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
		events.EnrollmentCreated{
			EnrollmentID:  "e-1",
			ClassID:       "c-1",
			StudentID:     "student-42",
			ClassStartsAt: &starts,
		})
	if err != nil {
		panic(err)
	}
	b, _ := json.Marshal(env)
	fmt.Println(string(b))
	// Output:
	// {"event_id":"3c1d2e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f","type":"enrollment.created","schema_version":2,"aggregate_id":"e-1","occurred_at":"2026-03-01T10:00:00Z","data":{"enrollment_id":"e-1","class_id":"c-1","student_id":"student-42","class_starts_at":"2026-03-15T17:00:00Z"}}
}

// A consumer decodes, switches on the type, and sends every decoding error to
// its dead-letter queue with the error text as the reason.
func ExampleDecode() {
	msg := []byte(`{"event_id":"0b6f3f4e-8f7c-4c1e-9a53-6f0d2c1b7a10","type":"enrollment.created",
		"schema_version":1,"aggregate_id":"e-1","occurred_at":"2026-03-01T10:00:00Z",
		"data":{"enrollment_id":"e-1","class_id":"c-1","student_id":"student-42"}}`)

	env, err := events.Decode(msg)
	if err != nil {
		fmt.Println("to DLQ:", err)
		return
	}
	switch env.Type {
	case events.TypeEnrollmentCreated:
		p, _ := env.EnrollmentCreated()
		fmt.Printf("v%d: %s enrolled in %s (class start known: %t)\n",
			env.SchemaVersion, p.StudentID, p.ClassID, p.ClassStartsAt != nil)
	}
	// Output:
	// v1: student-42 enrolled in c-1 (class start known: false)
}

// Every decoding error is permanent and carries a readable reason.
func ExampleDecode_unsupportedVersion() {
	msg := []byte(`{"event_id":"0b6f3f4e-8f7c-4c1e-9a53-6f0d2c1b7a10","type":"enrollment.created",
		"schema_version":9,"aggregate_id":"e-1","occurred_at":"2026-03-01T10:00:00Z","data":{}}`)

	_, err := events.Decode(msg)
	fmt.Println(errors.Is(err, events.ErrUnsupportedVersion))
	fmt.Println(err)
	// Output:
	// true
	// unsupported event schema version: enrollment.created version 9 (supported: [1 2])
}

// An inbox compares fingerprints to tell a harmless duplicate from a broken
// contract: the same event_id must always carry the same content.
func ExampleEnvelope_Fingerprint() {
	first, _ := events.Decode([]byte(`{"event_id":"0b6f3f4e-8f7c-4c1e-9a53-6f0d2c1b7a10",
		"type":"enrollment.cancelled","schema_version":1,"aggregate_id":"e-1","occurred_at":"2026-03-01T10:00:00Z",
		"data":{"enrollment_id":"e-1","class_id":"c-1","student_id":"s-1"}}`))
	redelivered, _ := events.Decode([]byte(`{"event_id":"0b6f3f4e-8f7c-4c1e-9a53-6f0d2c1b7a10",
		"type":"enrollment.cancelled","schema_version":1,"aggregate_id":"e-1","occurred_at":"2026-03-01T10:00:00Z",
		"data":{"student_id":"s-1","class_id":"c-1","enrollment_id":"e-1"}}`))
	tampered, _ := events.Decode([]byte(`{"event_id":"0b6f3f4e-8f7c-4c1e-9a53-6f0d2c1b7a10",
		"type":"enrollment.cancelled","schema_version":1,"aggregate_id":"e-1","occurred_at":"2026-03-01T10:00:00Z",
		"data":{"enrollment_id":"e-1","class_id":"c-2","student_id":"s-1"}}`))

	fmt.Println("duplicate:", first.Fingerprint() == redelivered.Fingerprint())
	fmt.Println("conflict: ", first.Fingerprint() != tampered.Fingerprint())
	// Output:
	// duplicate: true
	// conflict:  true
}
