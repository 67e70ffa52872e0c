// Package store implements the domain ports on DynamoDB (aws-sdk-go-v2).
// [New] returns one adapter per port over a shared client and [Config];
// package memstore is the in-memory fake with the same contract, and package
// storetest holds the suites that both pass.
//
// # Tables
//
// Two tables, named through Config (see testdata/template-tables.yaml for the
// template's definitions and [Tables] for the same in Go):
//
//   - club: pk (S, HASH) + sk (S, RANGE); TTL attribute "ttl"; no index.
//     Every entity of the domain, one item type per key pattern.
//   - outbox: event_id (S, HASH); TTL attribute "ttl"; stream NEW_IMAGE;
//     sparse GSI "unpublished" on unpublished_shard (S, HASH) + created_at
//     (S, RANGE), projection ALL.
//
// The outbox is a table of its own so that its stream carries outbox rows and
// nothing else: the relay needs no filter on entity types, and the club table
// pays for no stream.
//
// # Items of the club table
//
//	entity        pk                             sk                     notes
//	class         CLASS#<class_id>               CLASS                  capacity, seats_taken (the seat counter)
//	member        CLASS#<class_id>               MEMBER#<student_id>    the student's claim on a seat: unique per class and student
//	roster        CLASS#<class_id>               ROSTER                 as_of of the roster projection
//	roster_entry  CLASS#<class_id>               ROSTER#<enrollment_id> student_id, enrolled_at, cancelled_at
//	stats         CLASS#<class_id>               STATS                  enrollments_total, cancellations_total
//	enrollment    ENROLLMENT#<enrollment_id>     ENROLLMENT             status, notification_*, captured_email (at_enrollment policy only)
//	idempotency   IDEM#<caller>                  KEY#<key>              fingerprint, response_status, response_body; ttl
//	inbox         INBOX#<consumer>#<event_id>    INBOX                  fingerprint, event_type, processed_at; ttl
//	profile       USER#<user_id>                 PROFILE                email, display_name
//	lease         LEASE#<name>                   LEASE                  owner, lease_expires_ms
//
// Every item carries an "entity" attribute naming its kind, for people reading
// the table. A class's seat counter, members, roster and counters share its
// partition, so "who is in this class" is one Query. Each id comes after a
// fixed prefix and is the last thing in its attribute, so ids containing '#'
// cannot make two keys collide. Inbox rows get a partition each, so that a
// busy consumer's writes spread.
//
// # Transactions
//
// Create enrollment is one TransactWriteItems of five items (club and outbox
// tables): the idempotency record (attribute_not_exists), the member item
// (attribute_not_exists), the seat update (SET seats_taken = seats_taken + 1
// if attribute_exists and seats_taken < capacity), the enrollment
// (attribute_not_exists) and the outbox row (attribute_not_exists). Its
// cancellation reasons are read by item index, by precedence: idempotency →
// the record is read and returned (replay or 422), member →
// club.ErrAlreadyEnrolled, seat → the class is read: club.ErrClassNotFound or
// club.ErrClassFull. Reasons of passing items are "None" on AWS and "" on
// kumo; both mean "passed". No ClientRequestToken is used: the idempotency
// record already turns a retried commit into a replay.
//
// Cancel enrollment is one TransactWriteItems: status enrolled → cancelled
// (conditional), seats_taken - 1 (conditional on > 0), delete the member item
// (conditional on the enrollment id), put the outbox row.
//
// The inbox (ApplyOnce) is one TransactWriteItems: the inbox row
// (attribute_not_exists) and the effects, which are unconditional,
// commutative updates (ADD to counters; SET of fields that only one event
// type writes), so the inbox row is the only item that can cancel it.
//
// Transactions cancelled by TransactionConflict or throttling are retried
// with jittered exponential backoff (5 attempts), then reported as
// club.ErrContention. A failed condition is never retried.
//
// # Outbox rows and expiry
//
// An outbox row is inserted pending with unpublished_shard set (one of 8
// values from a hash of the event id, so index writes spread over
// partitions). MarkPublished sets status, published_at and ttl = published_at
// + OutboxRetention and removes unpublished_shard, taking the row out of the
// index, conditionally on status = pending. Pending rows have no ttl and are
// never deleted. The relay's stream filter should select INSERT records only.
//
// Idempotency records expire CreatedAt + IdempotencyRetention (24 h by
// default), inbox rows processed_at + InboxRetention (7 days). TTL deletes
// lazily (on AWS within about two days, on kumo every 30 s), so readers never
// rely on an expired row being gone.
//
// # Concurrency
//
// The adapters are stateless and safe for concurrent use; correctness under
// concurrent writers comes from the conditions above, never from reads. All
// reads of rows that decide something are strongly consistent; the
// "unpublished" index is eventually consistent (see Outbox.Unpublished).
package store
