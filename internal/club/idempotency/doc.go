// Package idempotency makes a retried API request safe. A client sends an
// Idempotency-Key with a request that creates something; the server stores a
// [Record] (the request's fingerprint and the response it gave) in the same
// transaction as the effect. A repeat with the same key and the same request
// gets the stored response again, without a second effect; the same key with a
// different request is refused with club.ErrIdempotencyKeyReused.
//
// Keys are scoped by caller: two users may use the same key independently.
// The fingerprint covers method, path, the canonical JSON body (key order and
// whitespace do not matter; an absent body equals "{}") and the caller.
//
// Only successful responses are stored: a request that failed (class full,
// validation) wrote nothing, so its retry is evaluated afresh. Records expire
// after a retention period ([DefaultRetention]); a key reused after that is a
// new request.
package idempotency
