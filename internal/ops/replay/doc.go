// Package replay re-delivers stored events to one consumer (docs/principles.md §1.10,
// §8): the outbox keeps every published event, with its original event_id,
// for OUTBOX_RETENTION, and a replay sends a window of them again to one
// consumer's queue, exactly as the relay published them.
//
// A replay is safe only while the consumer still remembers the events: its
// inbox row for each event_id is what turns a second delivery into a no-op,
// and inbox rows expire after the inbox retention (the template's
// InboxRetentionDays; the roster's entries record their events for good, so
// for the roster the limit is only cautious). [CheckWindow] refuses a window
// that starts earlier than that, less a margin for the replay's own
// duration; past it, a replay would repeat effects (a second e-mail, a count
// counted twice).
//
// [Select] reads the window from the outbox table: published rows of the
// types the consumer receives ([TypeFilter], from the consumer's SNS
// subscription filter, found with [FindSubscription]), oldest first. Rows
// still pending are left to the relay and the sweeper. [Send] delivers them
// in batches at a bounded rate, checking a condition as it goes (the age of
// live traffic in the queue), and stops cleanly between batches when its
// context is cancelled; what it sent is always a prefix of the rows, so a
// replay resumes from the first unsent event.
//
// Select and FindSubscription only read. Send only sends; two replays of
// the same window deliver twice, which the inbox absorbs.
package replay
