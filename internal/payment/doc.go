// Package payment is the client of the payment provider (docs/principles.md §7.2: in the
// local cloud the payment sandbox, on AWS the real provider behind
// PAYMENT_API_URL): create a payment and a refund, each under an
// idempotency key, and read their status.
//
// # Classifying results
//
// A call either returns a definite answer (a payment or refund with its
// status: pending, succeeded or failed) or an error in exactly one class,
// matched with errors.Is:
//
//   - [ErrUnknown]: no answer, or one that does not say what happened: a
//     timeout, a transport error, a dropped connection, a 5xx other than an
//     explicit "unavailable". The effect may have happened. The only safe
//     next step is to ask again with the same idempotency key (or read the
//     status); a caller must never treat it as a failure and compensate.
//   - [ErrUnavailable]: the provider said it did nothing and to come back
//     later (429, or 503 with an error code such as refund_unavailable; a
//     bare 503 is unknown). Safe to retry after a pause.
//   - [ErrRejected]: a 4xx: the provider refused and will refuse again
//     (validation, payment_not_succeeded, already_refunded,
//     idempotency_key_reused). [ErrNotFound] (404) is a kind of it.
//
// Provider answers carry a [*ProviderError] with the status and the
// provider's error code, so callers can log or branch on the code.
//
// # Timeouts
//
// Every call is bounded by Config.Timeout (default 10 s) on top of the
// caller's context: a provider that never answers (the sandbox's
// no_response fault) becomes ErrUnknown after that time instead of holding
// a Lambda until its own deadline.
//
// A Client is safe for concurrent use.
package payment
