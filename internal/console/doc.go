// Package console is the web page of clubctl console: an http.Handler with
// its assets embedded, in the manner of asynqmon and River UI — the work
// classes and their queues first, then dead letters, purchases that need a
// person, alarms, the capacity model, and one thing by id.
//
// The handler reads nothing itself: a Source answers every question with
// the same code as the clubctl commands (status, dlq, reconcile, capacity),
// so the page and the command line cannot disagree.
//
// It is read-only unless Options.AllowActions. Then an action (a redrive, a
// resolve) must carry the session's token in the X-Console-Token header: the
// token is in the page the console serves, which another site cannot read,
// so a cross-site request cannot act. Requests whose Host is not the
// console's own are refused too (DNS rebinding). Every action names who (the
// console's operator) and why (a reason the page requires), and is written
// to the audit log.
//
// Every error answers {"error":{"code","message"}} with a stable code.
package console
