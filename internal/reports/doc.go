// Package reports asks, every night, for each teacher's report (the bulk
// work class's second job, beside roster exports): functions/report-scheduler
// is its thin main, fired by the template's EventBridge schedule.
//
// For every teacher who has a class, [Scheduler.Run] writes a teacher report
// operation (pending, the teacher its creator) and its export.requested job
// through the outbox in one transaction (operation.Service's
// RequestTeacherReport). The relay sends the job to the exports queue and
// the exporter writes the CSV file and records its URL on the operation,
// exactly as for a roster export; teachers find their reports with
// GET /operations?kind=teacher_report.
//
// # Contracts
//
//   - Once per teacher and day: the operation's id is derived from the
//     teacher and the UTC day of the schedule's fire time, so a schedule that
//     fires again, or an invocation that is retried, creates nothing twice.
//   - Bounded: teachers are read a page at a time from the sparse
//     classes_by_teacher index (never the whole table, never all at once),
//     and at most [Concurrency] operations are written at a time.
//   - A failure for one teacher does not stop the others: the run goes on,
//     then fails with the count of failures, and its retry (or the next
//     night) asks again for what is missing.
package reports
