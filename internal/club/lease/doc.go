// Package lease is a time-bounded claim on shared work, such as the outbox
// sweeper's run (docs/principles.md §1.3, §1.14): one owner at a time does the work, and if
// it dies the claim lapses by itself.
//
// A lease is only advice about time. It does not prove that the previous owner
// has stopped (it may be paused, not dead, and wake up after its lease ran
// out), so work done under a lease must itself be safe to repeat: the sweeper
// republishes with the original event_id, and consumers deduplicate. Keep the
// lease's TTL well above the time one round of work takes, and renew it
// between rounds.
package lease
