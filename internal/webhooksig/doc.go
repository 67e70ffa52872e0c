// Package webhooksig signs and verifies the payment provider's webhook
// signatures, carried in the X-Sandbox-Signature header as
//
//	t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">
//
// The scheme follows the common provider pattern (Stripe-like): the signed
// payload is the timestamp, a dot and the raw request body, so a receiver
// must verify the exact bytes it received before decoding them. Binding the
// timestamp into the signature lets the receiver refuse replays of old
// deliveries: Verify rejects a timestamp further than the tolerance (five
// minutes by default) from its clock, in either direction.
//
// A header may carry several v1 values (a sender rotating secrets signs with
// each); Verify accepts the header if any of them matches. Unknown keys are
// ignored so the sender can add schemes later. Comparison is constant-time.
// An empty secret verifies nothing: anyone can compute an HMAC keyed with
// it, so Verify refuses it itself instead of trusting every caller to.
//
// Verify returns one of the sentinel errors ErrMalformedHeader,
// ErrBadSignature, ErrTooOld, ErrFromFuture or ErrNoSecret (wrapped with
// detail), so the API can answer 401 for all of them and still log which one
// it was. All functions are safe for concurrent use.
package webhooksig
