// Package outbox is the transactional outbox (docs/principles.md §1.14): the intent to
// publish an event, saved in the same transaction as the business change that
// caused it, so that either both exist or neither does.
//
// Life of a row:
//
//  1. The producer's transaction inserts it with status pending
//     ([NewRow]); the event_id inside is final.
//  2. The relay, woken by the outbox table's stream, publishes the payload and
//     then marks the row published ([Store.MarkPublished]). A crash between
//     the two republishes the same event_id later: consumers must (and do)
//     deduplicate by it.
//  3. The sweeper, on a schedule and under a lease, lists rows still pending
//     past a threshold ([Store.Unpublished]) and publishes them the same way.
//  4. A published row gets an expiry (published_at + retention, a named
//     setting, [DefaultRetention]) and is removed by the table's TTL.
//     Pending rows never expire and are never deleted: their age is a promise
//     not yet kept, which is what the operators' "oldest unpublished" metric
//     shows.
package outbox
