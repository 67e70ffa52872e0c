// Package operation is a long operation a user asked for and follows by id
// (docs/principles.md §1.5, §5): the export of a class's roster as a file, and the nightly
// report of a teacher's classes, which the schedule asks for on the
// teacher's behalf. The request is only accepted (202 with an operation id,
// status pending); the work is a job on the bulk work class's queue, and its
// outcome is written on the operation, never inferred from the broker.
//
// # Statuses
//
//	pending ──Start──▶ running ──Succeed──▶ succeeded
//	   │                  │
//	   └──────Fail────────┴──────Fail─────▶ failed
//
// Every change is a read-modify-write that the store writes conditionally on
// the operation being unchanged since the read ([Store.Update]), and each is
// appended to the operation's history. Start on a running operation is a
// no-op (a redelivered job resumes the work of one that crashed). A
// succeeded or failed operation never changes again: every method returns
// [ErrFinished], so a redelivered job finds it finished and does nothing.
//
// # Visibility
//
// Only the user who asked sees the operation ([Operation.VisibleTo]); anyone
// else gets [ErrNotFound], exactly as for an operation that does not exist.
//
// # Creation
//
// [Service.RequestRosterExport] writes the operation (pending) and its job
// (export.requested) to the outbox in one transaction ([Store.Create]): the
// operation never exists without the job that will finish it, and the job
// never without its operation. [Service.RequestTeacherReport] does the same
// for a teacher report, under an id derived from the teacher and the day
// ([TeacherReportID]): asked again for the same day, it creates nothing
// ([ErrExists]).
//
// # Lists
//
// [Service.List] pages through a user's own operations, newest first,
// optionally of one kind; it is how a teacher finds the reports the
// schedule asked for (GET /operations?kind=teacher_report).
//
// The package imports no AWS code; the DynamoDB adapter is in internal/store
// and the in-memory fake with the contract suite in package operationtest.
package operation
