// Package mail is the mail provider sandbox: a local stand-in for an e-mail
// API (default address 127.0.0.1:4580) that the notifier calls, with switches
// that reproduce every way a real provider makes the sender uncertain.
//
// Provider API:
//
//	POST /v1/messages {to, subject, text} + Idempotency-Key → 202 {message_id}
//	GET  /v1/messages[?to=ADDRESS] → 200 {messages:[{message_id,to,subject,text,idempotency_key,accepted_at}]}
//
// Control API (for tests and operators, never faulted or rate limited):
//
//	POST /_sandbox/faults {"mode":"none"|"error"|"slow"|"accept_then_drop","rate":0..1,"latency_ms":N,"seed":N}
//	GET  /_sandbox/faults
//	POST /_sandbox/config {"rate_per_second":N}
//	GET  /_sandbox/config
//	GET  /_sandbox/stats → {accepted,duplicates,conflicts,rate_limited,faults_injected,invalid}
//	POST /_sandbox/reset
//
// Contracts:
//
//   - Idempotency. A message is identified by its Idempotency-Key and the
//     SHA-256 of its canonical payload. The same key with the same payload
//     answers 202 with the original message_id (header Idempotent-Replayed:
//     true) and stores nothing; the same key with another payload answers 409
//     idempotency_key_reused. Keys never expire until reset. Check and insert
//     happen under one lock, so concurrent identical requests store one
//     message.
//   - Order of checks on a send: validation (400 idempotency_key_required,
//     invalid_json, validation_failed; 413 payload_too_large), then the rate
//     limit, then the fault, then idempotency. Every well-formed send,
//     duplicates included, takes a token, as at a real provider.
//   - Rate limit. A token bucket refilled at rate_per_second (default 100)
//     holding one second's worth (at least one token). An empty bucket
//     answers 429 rate_limited with Retry-After: the whole seconds (at least
//     1) until a token is available.
//   - Faults. With probability rate (default 1) a send is faulted: it first
//     waits latency_ms (if set), then error answers 503 provider_unavailable
//     without storing; slow (latency_ms required) goes on normally;
//     accept_then_drop stores the message (idempotently) and closes the
//     connection without an answer, so the caller cannot know it was sent; a
//     retry with the same key gets the same message_id. A client that gives
//     up during the wait sends nothing. Sampling uses a PRNG seeded by "seed"
//     (or Options.Seed); for sequential requests the same seed gives the same
//     sequence of faulted and clean sends.
//   - Reset clears messages, keys, faults and counters, restores the
//     configured rate with a full bucket and reseeds the PRNG.
//
// Note for Go callers: net/http's Transport treats a POST carrying an
// Idempotency-Key header as replayable, so when a reused keep-alive
// connection is dropped it resends the request once by itself. Against
// accept_then_drop that resend is exactly what the key makes safe.
//
// A Server is safe for concurrent use. Time comes from Options.Clock, so
// tests drive the rate limit and latency with a fake clock.
package mail
