// Package payment is the payment provider sandbox: a local stand-in for a
// card payment API (default address 127.0.0.1:4581) that the purchase saga
// calls, which confirms results by signed webhooks and can be switched to
// the faults that leave the caller unsure what happened.
//
// Provider API:
//
//	POST /v1/payments {amount_cents, currency, reference} + Idempotency-Key → 201 {payment_id,status:"pending",checkout_url,…}
//	GET  /v1/payments/{payment_id} → 200 {payment_id,status,reference,amount_cents,currency,checkout_url,created_at}
//	POST /v1/refunds {payment_id} + Idempotency-Key → 201 {refund_id,payment_id,status:"pending",amount_cents,created_at}
//	GET  /v1/refunds/{refund_id} → 200 refund
//	GET  /v1/refunds[?payment_id=ID] → 200 {refunds:[…]}
//	GET  /checkout/{payment_id} → an HTML page with "pay" and "decline" buttons
//
// Control API (stands in for the student at the checkout page, and for tests):
//
//	GET  /_sandbox/payments?reference=R → {payments:[...]}, the payments made for a reference, oldest first
//	POST /_sandbox/payments/{payment_id}/succeed | /fail → 200 payment, sends payment.succeeded | payment.failed
//	POST /_sandbox/refunds/{refund_id}/succeed | /fail   → 200 refund, sends refund.succeeded | refund.failed
//	GET  /_sandbox/events → {events:[{event,attempts,delivered,last_error}]}
//	POST /_sandbox/events/{event_id}/resend → 202, delivers the same event (same event_id) again
//	POST /_sandbox/faults {"mode":"none"|"refund_unavailable"|"no_response"|"duplicate_webhooks"|"delay_webhooks"|"hold_refunds","delay_ms":N}
//	GET  /_sandbox/faults
//	POST /_sandbox/reset
//
// Contracts:
//
//   - Idempotency. A payment or refund is identified by its Idempotency-Key
//     (payments and refunds have separate key spaces) and the SHA-256 of its
//     payload. The same key and payload answer 201 with the original object
//     as it is now (header Idempotent-Replayed: true); the same key with
//     another payload answers 409 idempotency_key_reused. A replay is
//     answered before any other rule, so retrying a refund that was accepted
//     never turns into already_refunded.
//   - Refunds. Only a succeeded payment can be refunded (409
//     payment_not_succeeded), in full and at most once: a second refund
//     under another key answers 409 already_refunded while an earlier
//     refund is pending or succeeded (a failed one may be retried). A refund
//     succeeds by itself after Options.RefundDelay unless settled earlier
//     through the control API.
//   - Status changes. pending → succeeded | failed, for payments and refunds
//     alike. Asking for the state an object is already in changes nothing
//     and sends no webhook; asking to leave a final state answers 409
//     invalid_transition.
//   - Webhooks. Every status change sends one event, POSTed to
//     Options.WebhookURL with body {event_id,type,payment_id,reference,
//     amount_cents} (refund events add refund_id) and header
//     X-Sandbox-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">
//     (see package webhooksig). A non-2xx answer or a transport error is
//     retried up to Options.WebhookAttempts times, waiting WebhookBackoff,
//     then twice as long each time. Every attempt carries the same body and
//     event_id, freshly signed. Events are delivered concurrently, so two
//     events may arrive out of order, as with real providers.
//   - Faults. refund_unavailable answers 503 refund_unavailable to every
//     /v1/refunds call and changes nothing. no_response applies the /v1 call
//     (a payment or refund is created) and then withholds the answer until
//     the client gives up, Options.MaxHang passes (the connection is then
//     closed without an answer) or the sandbox is reset or shut down: the
//     effect happened but the caller cannot know. duplicate_webhooks
//     delivers every event twice; delay_webhooks waits delay_ms before the
//     first attempt. The fault in force when an event is raised decides how
//     it is delivered. hold_refunds keeps a refund created while it is in
//     force pending until the control API settles it (it never succeeds by
//     itself), so a test can fail it at the provider.
//   - Reset clears payments, refunds, keys, events and faults, cancels
//     pending refund timers and deliveries, and returns once they have
//     stopped, so no webhook from before the reset arrives after it.
//
// A Server is safe for concurrent use. Time comes from Options.Clock, so
// tests drive refund delays, backoff and webhook delays with a fake clock.
package payment
