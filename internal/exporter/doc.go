// Package exporter builds the files of export operations (docs/principles.md §5, the bulk
// work class): for each export.requested job from the exports queue it marks
// the operation running, builds the file its kind asks for — a class's
// roster (the roster projection), or a teacher's nightly report (one row per
// class of the teacher, with its seats and the stats projection's counters,
// read a page at a time) — writes it as CSV to the exports bucket, presigns a
// GET URL that expires, and marks the operation succeeded with {url, rows,
// expires_at}. functions/exporter is its thin main; package reports asks for
// the nightly reports.
//
// # Contracts
//
//   - Idempotency: the file's key is derived from the operation id
//     ([ObjectKey]), so a redelivered or retried job overwrites the same
//     object and never makes a second result; a job for an operation that
//     has already succeeded or failed is acknowledged and changes nothing
//     (operation.ErrFinished).
//   - Honest status: the operation's status is the business status; a
//     failure the job cannot recover from is written on the operation
//     before the message leaves the queue.
//   - Errors, classified once ([Handler]):
//     the class is gone → the operation fails with class_not_found and the
//     job is acknowledged (nothing a person can fix);
//     the job cannot be read → the operation it names (if it can be found)
//     fails with malformed_job and the job goes to the dead-letter queue
//     (malformed_event) for a person;
//     the job names no operation → dead-letter queue (operation_not_found);
//     a message of another type → dead-letter queue (unexpected_type);
//     anything else is transient: retried with backoff, and on the queue's
//     last allowed receive (MAX_RECEIVE_COUNT) the operation fails with
//     retries_exhausted and the job goes to the dead-letter queue with the
//     last error as its reason.
//   - The URL is presigned when the file is complete, not when the export is
//     requested: it must name an object that exists, and its lifetime
//     (EXPORT_URL_EXPIRY) starts when the teacher can first use it.
//   - Ordering and concurrency: jobs are independent; the event source
//     mapping's MaximumConcurrency bounds how many run at once (the bulk
//     class never takes the urgent class's capacity).
package exporter
