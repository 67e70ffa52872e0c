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
//   - club: pk (S, HASH) + sk (S, RANGE); TTL attribute "ttl". Every entity
//     of the domain, one item type per key pattern. Two sparse GSIs:
//     "classes_by_teacher" on class_teacher_id (S, HASH) + starts_at (S,
//     RANGE), projection KEYS_ONLY, which only class items enter (the
//     nightly teacher report: [Classes.Teachers], [Projections.TeacherClasses]);
//     "operations_by_creator" on created_by (S, HASH) + created_at (S,
//     RANGE), projection ALL, which only operation items enter
//     ([Operations.List], GET /operations).
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
//	class         CLASS#<class_id>               CLASS                  capacity, seats_taken (the seat counter), class_teacher_id
//	member        CLASS#<class_id>               MEMBER#<student_id>    the student's claim on a seat: unique per class and student
//	roster        CLASS#<class_id>               ROSTER                 as_of of the roster projection (read, no longer written)
//	roster_entry  CLASS#<class_id>               ROSTER#<enrollment_id> student_id, enrolled_at, cancelled_at, as_of (of the write); created_event, created_fp, cancelled_event, cancelled_fp (the roster's inbox)
//	stats         CLASS#<class_id>               STATS                  enrollments_total, cancellations_total
//	enrollment    ENROLLMENT#<enrollment_id>     ENROLLMENT             status, notification_*, captured_email (at_enrollment policy only)
//	idempotency   IDEM#<caller>                  KEY#<key>              fingerprint, response_status, response_body; ttl
//	inbox         INBOX#<consumer>#<event_id>    INBOX                  fingerprint, event_type, processed_at; ttl (every consumer but the roster)
//	profile       USER#<user_id>                 PROFILE                email, display_name
//	lease         LEASE#<name>                   LEASE                  owner, lease_expires_ms
//	intensive     INTENSIVE#<intensive_id>       INTENSIVE              capacity, seats_free, seats_held, seats_taken, price, hold_seconds
//	access        INTENSIVE#<intensive_id>       ACCESS#<student_id>    purchase_id, granted_at: unique per intensive and student
//	purchase      PURCHASE#<purchase_id>         PURCHASE               status, history [{status, at}], payment_*, refund_*, task_token, version
//	operation     OPERATION#<operation_id>       OPERATION              kind, class_id (roster exports), created_by, status, history, result_*, error_*, version
//
// Every item carries an "entity" attribute naming its kind, for people reading
// the table. A class's seat counter, members, roster and counters share its
// partition, so "who is in this class" is one Query. Each id comes after a
// fixed prefix and is the last thing in its attribute, so ids containing '#'
// cannot make two keys collide. Inbox rows get a partition each, so that a
// busy consumer's writes spread.
//
// captured_email lives only until the confirmation mail is sent: the write
// that records sent removes it (a failed mail keeps it for a redrive).
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
// Create purchase (package purchase) is one TransactWriteItems of four
// items, like create enrollment: the idempotency record, the hold
// (seats_free - 1, seats_held + 1 if attribute_exists and seats_free > 0: a
// condition cannot add two attributes, so the free count is stored and
// free + held + taken = capacity always), the purchase (reserved) and the
// outbox row (purchase.requested). Precedence of its failures: idempotency
// → replay or 422, hold → purchase.ErrIntensiveNotFound or
// purchase.ErrIntensiveFull.
//
// Every later change of a purchase is an optimistic read-modify-write
// (Purchases.Update): the row is replaced conditionally on its version and
// on the status it was read in (so a transition happens only from the
// status the domain allowed it from), and its history is the old one plus
// the new entry. A status change with a seat effect adds, in the same
// TransactWriteItems, the counter update (release: seats_held - 1,
// seats_free + 1; take: seats_held - 1, seats_taken + 1; both conditional
// on seats_held > 0) and, when a seat is taken, the access item
// (attribute_not_exists: purchase.ErrAlreadyHasAccess). A late payment
// (expired → refund_pending) has no seat effect: it never touches the
// counters. Changes without a seat effect (a task token, an observed
// provider status) are a single conditional PutItem.
//
// Create operation (package operation, [Operations]) is one
// TransactWriteItems of two items: the operation (pending,
// attribute_not_exists, else operation.ErrExists: a teacher report's id is
// deterministic, so a second fire of its schedule writes nothing) and its
// job's outbox row (export.requested). Every
// later change is an optimistic read-modify-write: one PutItem conditional
// on the version it was read at (a lost race re-reads, 5 attempts, then
// club.ErrContention); the domain refuses any change to a finished
// operation before anything is written.
//
// The inbox (ApplyOnce) is one TransactWriteItems: the inbox row
// (attribute_not_exists) and the effects, which are unconditional,
// commutative updates (ADD to counters; SET of fields that only one event
// type writes), so the inbox row is the only item that can cancel it.
// ApplyAllOnce does the same for a batch of events in one transaction: every
// inbox row, then one update per touched item (counters of a class summed,
// an enrollment and its cancellation on one roster entry merged), split in
// halves above 100 items. A transaction cancelled by inbox rows that exist
// (ConditionalCheckFailed on them, by item index, and on nothing else) is
// committed again without their events, at most three rounds, and
// projection.AlreadyRecorded names them, each settled from its row (one
// strongly consistent BatchGetItem: duplicate or contract conflict); the
// caller applies only a row it could not read with ApplyOnce. Any other
// cancellation tells the caller to apply every event with ApplyOnce. The roster's as_of rides on the entries the
// transaction writes anyway instead of on an item of its own (the reader
// takes the latest), so a batch writes one item per class fewer: every item
// of a transaction costs two write units.
//
// The roster's entries are their own inbox (projection.RecordedOnEntry: the
// roster consumer's applications of one roster effect, which is every one
// it makes). An entry is keyed by enrollment, so its effect is idempotent by
// key, and it carries the record of the events applied to it: created_event
// and created_fp (the event id and fingerprint of the AddToRoster),
// cancelled_event and cancelled_fp (of the RemoveFromRoster). Its write sets
// them with the effect, conditional on "attribute_not_exists(<own>_event)
// AND (attribute_not_exists(<other>_event) OR <other>_event <> :id)"
// (projection.EntryRecord.Admits), and no inbox row is written. ApplyOnce is
// then one conditional UpdateItem (one write unit instead of a transaction
// of two items, four); when it is refused, the entry is read (strongly
// consistent) and its record decides: the same id and fingerprint →
// inbox.ErrDuplicate, the same id with another fingerprint or of the other
// kind, or another event of the same kind → inbox.ErrContractConflict. The
// roster's projector does not batch them (projection.Projector.ApplyAll): a
// transaction would bill each entry twice and add nothing, since each entry
// is its own record, so a Lambda batch is one conditional UpdateItem per
// event, ten at once (1 write unit each instead of 2). ApplyAllOnce still
// takes such applications: the entry's update carries the condition, one
// item per entry (an enrollment and its cancellation merged, both
// conditions required), and an applied event cancels the transaction, after
// which ApplyOnce settles each event as above. A duplicate moves
// nothing, as_of included. Analytics keeps its inbox rows: a counter's
// increment is not idempotent by key. So do other consumers and
// applications mixing effects, even in one batch with recorded ones.
//
// What the roster gives up: an event id reused with content that names
// another enrollment or class lands on another entry, which has no record of
// it, so the roster applies it (analytics still recognises it by its inbox
// row and dead-letters it). And an entry's record, unlike an inbox row,
// never expires: a redelivery or replay of a roster event is recognised
// however late it comes. Entries written before they carried a record have
// none: an event applied then and delivered again is applied again, which
// sets the same values (only as_of moves).
//
// The notifier changes an enrollment's notification with one conditional
// UpdateItem per step (ChangeNotification) and no read: "SET status = to
// [, sent_at] [ADD attempts 1] if status IN (from…)", with ALL_NEW as the
// answer. Only when no case of the change holds is the enrollment read, to
// tell a refusal (already sent), a no-op and a missing enrollment apart.
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
// index, conditionally on status = pending. MarkAllPublished (a relay
// batch) writes the same published rows whole with BatchWriteItem, 25 per
// call, without a condition or a transaction: one write unit per row instead
// of two. The promise holds because a mark is idempotent and outbox rows
// never change but for it: a row the sweeper marked first is written again
// as published (a later published_at), and a row left unmarked by a failed
// call stays pending, is republished by the sweeper and deduplicated by the
// consumers' inboxes. Pending rows have no ttl and are never deleted. The
// relay's stream filter should select INSERT records only.
//
// Idempotency records expire CreatedAt + IdempotencyRetention (24 h by
// default), inbox rows processed_at + InboxRetention (7 days); a roster
// entry's record of its events does not expire. TTL deletes
// lazily (on AWS within about two days, on kumo every 30 s), so readers never
// rely on an expired row being gone.
//
// # Paginated reads and cursors
//
// The teacher report and GET /operations read a page at a time (Limit) and
// hand the position on as an opaque cursor: the LastEvaluatedKey's string
// attributes, JSON in base64url. A cursor coming back is decoded, checked
// (only key attributes; the partition it belongs to must be the caller's)
// and the start key rebuilt from it, so a forged cursor can move a read
// only within what its caller may read; anything else is not a cursor
// (operation lists answer a *club.ValidationError on "cursor"). Operations.List
// keeps a kind with a FilterExpression and queries again, at most 4 times,
// while the page is not full.
//
// # Concurrency
//
// The adapters are stateless and safe for concurrent use; correctness under
// concurrent writers comes from the conditions above, never from reads. All
// reads of rows that decide something are strongly consistent; the
// "unpublished" index is eventually consistent (see Outbox.Unpublished).
package store
