// Package mail is the client of the mail provider's HTTP API (docs/principles.md §7.1; the
// mail sandbox in internal/sandbox/mail implements the same API):
//
//	POST {base}/v1/messages {to, subject, text} + Idempotency-Key → 202 {message_id}
//
// # Outcomes
//
// [Client.Send] classifies every attempt into exactly one outcome, because the
// caller records a different business status for each (docs/principles.md §1.11, §1.13):
//
//   - success (a 2xx): the provider accepted the message; [Receipt] carries its
//     message_id and whether the provider recognised the key (Replayed);
//   - [ErrRejected] (a 4xx retrying cannot fix, such as 400 validation_failed)
//     and [ErrKeyReused] (409 idempotency_key_reused: the key already names a
//     different message; it matches ErrRejected too): permanent;
//   - [ErrRateLimited] (429): transient; the provider's Retry-After is
//     available through [RetryAfter];
//   - [ErrUnavailable] (5xx, 408, or a failure before the request started to
//     be written, such as a refused connection or a failed handshake):
//     transient, and the message was certainly not accepted;
//   - [ErrOutcomeUnknown]: the request may have reached the provider and no
//     answer came back (the connection dropped, or the timeout or context
//     ended while waiting). The provider may have accepted it. Retry with the
//     same idempotency key: the provider then answers with the original
//     message_id instead of sending a second mail. The line is drawn
//     conservatively, at the moment the request starts to be written: a
//     needless "unknown" costs one safe retry, a wrong "not sent" would
//     misreport a sent mail.
//
// Non-2xx answers are *[ProviderError] values carrying the status, the
// provider's error code and Retry-After.
//
// # No silent replays
//
// net/http's Transport resends a request by itself when a reused keep-alive
// connection breaks before the answer, if it considers the request
// replayable, and it considers a POST with an Idempotency-Key header
// replayable whenever the body can be rewound (Request.GetBody is set, as
// http.NewRequest does for in-memory bodies). That resend would turn
// "connection dropped after the provider accepted" into a quiet success or a
// second failure, hiding the unknown window from the caller. The client
// therefore sends every request without GetBody, which makes it
// non-replayable: the transport never resends it, each Send is exactly one
// request on the wire, and the caller decides about the retry (with the same
// key). Keep-alive connections are still used, and the default transport
// keeps up to [MaxIdleConns] of them idle, enough for a notifier's ten
// concurrent sends: Go's default of two would close eight connections after
// every batch and dial them again for the next.
//
// # Idempotency
//
// The caller owns the idempotency key and must derive it from something
// stable (the notifier uses the event id) and pass the same payload on every
// retry: the provider answers a reused key with a different payload with 409.
//
// A Client is safe for concurrent use.
package mail
