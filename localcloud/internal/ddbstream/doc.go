// Package ddbstream is the local cloud's DynamoDB Streams: a stream record
// for every item a write changes, in commit order, served through the
// DynamoDB Streams API.
//
// The emulator's DynamoDB is correct but its streams are not: no records for
// TransactWriteItems or BatchWriteItem, sequence-number iterators that start
// from the beginning, no ListStreams. So the local cloud replaces DynamoDB
// Streams entirely, with three parts:
//
//   - Log holds the records of every stream in memory, in commit order, and
//     the description of each stream (StreamInfo). Pollers read it directly
//     with Read; the API reads it with Since.
//   - Recorder sits in front of the emulator's DynamoDB. For a write to a
//     stream-enabled table it reads the old image of each item it addresses
//     (consistent GetItem, or TransactGetItems for several), forwards the
//     write, reads the new images and appends one record per changed item.
//   - API answers ListStreams, DescribeStream, GetShardIterator and
//     GetRecords from the Log, so the AWS SDKs, the AWS CLI and the event
//     source mapping pollers read the same records.
//
// # Contracts
//
// Ordering. Recorded writes (PutItem, UpdateItem, DeleteItem,
// BatchWriteItem, TransactWriteItems touching a stream-enabled table) are
// serialised by one lock held from reading the old images to appending the
// records, so stream order is commit order. The records of one
// BatchWriteItem or TransactWriteItems are appended to each stream in one
// Log.Append, adjacent and in request order (for BatchWriteItem, the order
// in which the request lists its tables, then its items). Every stream has
// one shard (ShardID), so each stream is one total order.
//
// Which writes produce records. A record is appended when an item's image
// changed: INSERT (no old image), MODIFY, REMOVE (no new image). Like AWS, a
// PutItem or UpdateItem that leaves the item exactly as it was and a delete
// of a missing item produce no record, and neither does a failed
// conditional write, a cancelled transaction or a ConditionCheck. Images are
// included per the stream's view type (KEYS_ONLY, NEW_IMAGE, OLD_IMAGE,
// NEW_AND_OLD_IMAGES). Records carry ApproximateCreationDateTime rounded
// down to the second, a random eventID, SizeBytes by DynamoDB's item size
// rules (approximate for numbers), eventSource "aws:dynamodb", eventVersion
// "1.1" and awsRegion "us-east-1". Attribute values use the stream wire
// shape ({"S": ...}, {"N": "..."}, {"M": {...}}, {"B": base64}, ...), which
// is also what events.DynamoDBAttributeValue marshals to.
//
// Passthrough. Reads, and writes that touch no stream-enabled table, are
// forwarded without the lock and without extra calls. The first write to a
// table the recorder has not seen (through CreateTable or DescribeTable)
// costs one DescribeTable, so that tables created behind its back, such as
// those the emulator restores from its data directory, keep their streams.
//
// Emulator fixes. Every DynamoDB answer gets an X-Amz-Crc32 header that
// matches its body (the SDK validates the header even when it is absent and
// warns on every call otherwise). Table descriptions name the local stream
// (LatestStreamArn, LatestStreamLabel, StreamSpecification). UpdateTable
// can enable and disable a stream. In a cancelled TransactWriteItems the
// items that did not fail get the code "None". A TransactWriteItems with a
// ClientRequestToken is idempotent for 10 minutes after it succeeded: a
// retry returns the first answer without applying again, the same token with
// a different request is IdempotentParameterMismatchException, and a retry
// while the first is still running is TransactionInProgressException.
//
// Streams API. Iterators are opaque strings that encode the stream and the
// position; they expire after 15 minutes (ExpiredIteratorException), and a
// string that is no iterator is a ValidationException. All four iterator
// types work: TRIM_HORIZON, LATEST, AT_SEQUENCE_NUMBER and
// AFTER_SEQUENCE_NUMBER (the number must be one of the stream's records).
// GetRecords never waits, returns at most 1000 records or about 1 MB, and
// always returns NextShardIterator while the stream is enabled.
//
// Concurrency. Log, Recorder and API are safe for concurrent use.
//
// # Limits
//
// Records live in memory for the life of the process (no 24-hour trim); a
// Journal (SetJournal, Restore) keeps them across restarts of a persistent
// local cloud. Stream ARNs are derived from the table ARN with a fixed
// label (StreamARN), so a table deleted and created again, or a stream
// disabled and enabled again, continues the same stream. Items deleted by the
// emulator's TTL sweeper produce no record. Writes sent to the emulator
// without passing through the Recorder produce no record.
package ddbstream
