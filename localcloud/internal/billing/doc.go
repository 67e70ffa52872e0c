// Package billing counts what AWS would bill for the requests that pass the
// local cloud's endpoint, by service and operation, so that a benchmark can
// price a design from its real traffic instead of from averages. It is off
// until switched on (PUT /_club/units {"enabled": true}): counting reads
// every metered request and answer, and asks the engine for item images.
//
// The rules are AWS's on-demand billing rules:
//
//   - DynamoDB writes: one write request unit per 1 KB of the item, rounded
//     up per item, at least one; twice that for each item of a
//     TransactWriteItems (Put, Update, Delete and ConditionCheck alike); each
//     item of a BatchWriteItem on its own. The size of a Put is the item
//     sent; of an Update, the item after the write (read from the engine);
//     of a Delete or a ConditionCheck, the item before it (read from the
//     engine; a missing item counts as one unit). A write refused by its
//     condition (ConditionalCheckFailedException, TransactionCanceled) is
//     billed as AWS bills it; a request refused otherwise is not.
//   - DynamoDB global secondary indexes, counted apart (IndexWriteUnits):
//     an item entering an index is one write of its projection (the
//     table's and the index's keys, plus every attribute for ALL, the
//     included ones for INCLUDE), per 1 KB rounded up; leaving it, one
//     write; a change of an index key, two (the old entry deleted, the new
//     one put); a change of projected attributes only, one; an item in no
//     index before or after, nothing. The items are read from the engine
//     just before and just after the call (a concurrent write to the same
//     item in between would be taken as this one's); a refused write
//     changes no index. Index writes are priced as plain writes, also for
//     the items of a transaction: AWS documents the doubling for the
//     table's items, and indexes are updated asynchronously.
//   - DynamoDB reads: one read request unit per 4 KB for a strongly
//     consistent read, half for an eventually consistent one, twice for a
//     transactional one. GetItem and each item of a BatchGetItem or
//     TransactGetItems are rounded up on their own (a missing item counts as
//     the minimum); a Query or Scan sums the sizes of the items it returns
//     and rounds the total up once.
//   - SQS: one request per 64 KB chunk of the payload (message bodies and
//     attributes; for ReceiveMessage, the messages received), at least one.
//   - SNS: one publish per 64 KB chunk of the payload of a Publish or of a
//     whole PublishBatch, at least one.
//
// Not counted: the size of the item a Put replaces, items a Query or Scan
// reads but its filter drops, and requests of other services (they are
// counted, unpriced, by the endpoint's request counter).
package billing
