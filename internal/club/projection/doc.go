// Package projection builds the read models that the roster and analytics
// consumers maintain from enrollment events: a class's roster (who is
// enrolled, since when) and its counters (enrollments_total,
// cancellations_total).
//
// A consumer turns an event into [Effect] values ([RosterEffects],
// [StatsEffects]) and applies them through an [Inbox], which commits the
// effects and the record that the event was applied in one write: an inbox
// row in the same transaction (see package inbox) for the counters, and for
// the roster the entry itself, which records the events that added and
// removed it ([RecordedOnEntry], [EntryRecord]). So each event changes a
// read model at most once per consumer, however often it is delivered.
//
// Events may also arrive out of order (several workers, redeliveries): a
// cancellation can be applied before the enrollment it cancels. The roster is
// therefore keyed by enrollment and order-independent: adding an entry sets
// the student and enrollment time, removing it sets a cancellation time, and
// an entry is listed only if it was added and never removed. Both effects
// commute, so any delivery order gives the same roster. Counters are sums and
// commute too.
package projection
