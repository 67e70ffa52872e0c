// Package sandboxhttp holds the HTTP conventions the mail and payment
// sandboxes share, so both speak like one provider family: JSON bodies of at
// most 64 KiB, the error envelope {"error":{"code","message"}} (also for
// unknown routes and wrong methods), a required Idempotency-Key header,
// dropping a connection without an answer, and running a handler on an
// address until Shutdown.
//
// Handlers return an error instead of writing failures themselves: an *Error
// becomes its status and code, anything else a 500 internal_error, so a
// handler cannot forget to answer. Everything here is safe for concurrent use.
package sandboxhttp
