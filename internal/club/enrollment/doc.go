// Package enrollment is the heart of the Club domain: a student takes a seat
// in a class, and everything that follows (the confirmation e-mail, the
// teacher's roster, the analytics) happens later, driven by an event.
//
// # Creating
//
// [Service.Enroll] commits, through [Store.Create], in one transaction: a seat
// on the class (only if one is free), the enrollment (only if the student does
// not already hold a seat in the class), the enrollment.created event in the
// outbox, and the idempotency record with the response. The answer is returned
// right after that commit; nothing in the request waits for mail (docs/principles.md §1.1).
//
// The same Idempotency-Key with the same request returns the stored response
// (Replayed is true) and writes nothing; with another request it fails with
// club.ErrIdempotencyKeyReused. A concurrent duplicate (a double click) loses
// the transaction on the idempotency record and is answered as a replay.
//
// # First profile
//
// A student who has never set a profile (PUT /me/profile) gets one on
// enrolling, made from the e-mail claim of the token (profile.FromToken), so
// that the notifier finds an address under the current address policy. It is
// created before the enrollment is committed, because the notifier may look
// for it as soon as the event leaves the outbox, and only if absent, so it
// never overwrites the student's own choice (see [ProfileSeeder]).
//
// # Cancelling
//
// [Service.Cancel] commits the status change (only from enrolled), the freed
// seat, the removal of the student's claim on the class (so the student may
// enroll again later) and the enrollment.cancelled event, in one transaction.
// Cancelling a cancelled enrollment returns it unchanged and emits nothing.
//
// # Notification status
//
// The business status of the confirmation e-mail (docs/principles.md §1.13) lives on the
// enrollment, never inferred from the broker: pending → sent | failed |
// unknown, with the number of attempts. See [Notification] for the allowed
// transitions and [NotificationStore] for the notifier's port.
//
// # Concurrency
//
// Every rule that could be broken by concurrent requests (no overbooking, one
// seat per student, one effect per idempotency key, one cancellation) is
// enforced by the store's conditional writes, not by reads in the service, so
// the Service itself is stateless and safe for concurrent use.
package enrollment
