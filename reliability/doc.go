// Package reliability is the fault-injection suite of the Club backend
// (docs/principles.md §9, docs/reliability.md). It starts the local cloud with every
// function built with the faults tag (package fault), stops or fails the
// system at each boundary of the enrollment path and then checks business
// facts, not delivery counts:
//
//   - an enrollment exists if and only if its intent (the outbox row of its
//     enrollment.created event) exists;
//   - the class's counter changed exactly once per enrollment, and the
//     roster lists each student once;
//   - the mail provider accepted one message per enrollment, and the
//     enrollment says it was sent.
//
// TestExercise1 crashes each boundary of the source's first exercise once;
// TestExercise2 runs the purchase saga's four cases of the second exercise
// (a repeated late webhook, the refund provider unavailable, a crash after
// the refund was accepted, a re-run of an old handler) and checks the
// saga's facts instead: the seat pools add up to the capacity and a late
// payment takes no seat, the unfinished money result (refund_pending) is
// visible until the provider confirms, at most one refund per payment;
// TestSoak runs many enrollments with every fault point firing at random
// (seeded) and checks the same facts for all of them, plus that no message is
// left outside a dead-letter queue and that every dead letter carries a
// reason.
//
// Flags (after -args): -club.seed N replays a run (every run prints its
// seed); -club.soak N sets the soak's size (default 200, as in make test;
// make test-reliability runs 2000; 0 skips it);
// -club.report PATH rewrites the generated tables of docs/reliability.md
// (make test-reliability does).
//
// The suite owns the stack it starts and arms faults on it, so it never
// targets a shared stack: unlike package e2e it ignores CLUB_STACK_FILE.
// Its tests run one after another, never in parallel: an armed plan applies
// to the whole stack.
package reliability
