// Package api is the Club backend's HTTP API (docs/principles.md §5) as a Lambda handler
// for API Gateway HTTP API events (payload format 2.0): routing, the
// caller's identity, request decoding, response rendering and the mapping of
// domain errors to HTTP. Business rules live in the domain packages
// (internal/club/...); this package only translates. It needs no Lambda
// runtime to test: build a [Handler] over the memstore fakes and call
// [Handler.Handle] with events.
//
// # Routes
//
// The contract of these routes — bodies, statuses, headers and error codes —
// is api/openapi.yaml (OpenAPI 3.1). The package's tests fail when a route
// of the router or a Code constant is missing from it, and check every
// answer they see against it (package apicontract).
//
//	GET    /healthz                                  anyone                 200 {"status":"ok"}; 503 webhook_secret_unavailable
//	POST   /classes                                  teacher                201 class
//	GET    /classes/{class_id}                       signed in              200 class
//	POST   /classes/{class_id}/enrollments           student                201 enrollment (Idempotency-Key required)
//	GET    /classes/{class_id}/roster                the class's teacher    200 roster (projection)
//	GET    /classes/{class_id}/stats                 the class's teacher    200 counters (projection)
//	GET    /enrollments/{enrollment_id}              its student, the class's teacher
//	DELETE /enrollments/{enrollment_id}              its student            200 enrollment, status cancelled
//	PUT    /me/profile                               signed in              200 profile
//	POST   /intensives                               teacher                201 intensive
//	GET    /intensives/{intensive_id}                signed in              200 intensive
//	POST   /intensives/{intensive_id}/purchases      student                202 purchase accepted + Location (Idempotency-Key required)
//	GET    /purchases/{purchase_id}                  its student            200 purchase: status, payment, refund, history
//	POST   /webhooks/payments                        the payment provider   200 (signed: X-Sandbox-Signature, no token)
//	POST   /classes/{class_id}/exports               the class's teacher    202 operation accepted + Location
//	GET    /operations/{operation_id}                its creator            200 operation: status, result or error, history
//	GET    /operations[?kind=&limit=&cursor=]        signed in              200 {operations (own, newest first), next_cursor?}
//
// Any other path is 404 route_not_found and a known path with another method
// 405 method_not_allowed (with Allow), which is what the template's $default
// route relies on.
//
// # Identity and access
//
// The caller is read only from requestContext.authorizer.jwt.claims, which
// API Gateway's JWT authorizer filled after verifying the token: sub is the
// user id, cognito:groups the roles (as API Gateway renders lists,
// "[student teacher]", or a JSON array), email the address used for a first
// profile. Nothing in the body or other headers names the caller. No claims:
// 401 unauthorized. The wrong role for a route (a student creating a class):
// 403 forbidden. A resource the caller may not see (another student's
// enrollment, another teacher's roster): 404 not_found, exactly as if it did
// not exist.
//
// # Errors
//
// Every failure is a JSON body {"error":{"code","message"[,"field"]}} with a
// stable snake_case code; the checks run in this order and the first failure
// answers: route (404, 405), identity (401), role (403), ids in the path
// (404), body size over [MaxBodyBytes] (413 payload_too_large), then the
// route's own: Idempotency-Key (400 idempotency_key_required), body (400
// invalid_json; 400 validation_failed naming the field, also for unknown
// fields), and the domain's answer (404 class_not_found /
// intensive_not_found / payment_not_found / operation_not_found /
// not_found, 409 class_full /
// intensive_full / already_enrolled, 422 idempotency_key_reused, 429
// contention with Retry-After). Domain errors are classified in one place
// (classify). A dependency the function could not set up at start
// ([UnavailableError]: the webhook secret missing from SSM) makes /healthz
// and the routes that need it answer 503 webhook_secret_unavailable, with
// Retry-After and a message naming the parameter; every other route works.
// Input limits, each answered 4xx with a code before anything is written:
// bodies over 64 KiB (413), Idempotency-Key 8 to 128 visible ASCII
// characters, path ids 1 to 128 URL-safe characters (404 as if missing), a
// token subject of at most 256 characters without control characters (401),
// title 1 to 200 and display_name 1 to 100 characters without control or
// bidirectional-override characters, e-mail at most 254 bytes, capacity
// 1 to 10000 as a JSON integer, starts_at RFC 3339 between 2000-01-01 and
// 9999-12-31 in UTC (400 validation_failed naming the field). Header sizes
// are bounded before the function runs, by API Gateway (10240 bytes for the
// request line and header values; the local gateway enforces the same).
// No client input yields a 5xx: 500 internal means a bug or an
// infrastructure failure, is logged with its cause, and a recovered panic
// answers it too (FuzzAPI checks that inputs never reach it).
//
// # Idempotent enrollment
//
// POST /classes/{class_id}/enrollments requires Idempotency-Key (8 to 128
// visible ASCII characters). The first answer is stored with the enrollment
// in one transaction; the same key with the same request (method, path,
// canonical body, caller) gets the same status and body again with
// Idempotent-Replayed: true and no second seat, event or e-mail; the same key
// with another request is 422 idempotency_key_reused.
//
// # Purchases and the payment webhook
//
// A purchase is accepted, not done (docs/principles.md §1.5): POST
// /intensives/{intensive_id}/purchases holds a seat and records the start
// of the saga in one transaction and answers 202 {purchase_id, status
// "reserved", hold_expires_at} with Location: /purchases/{id}; the student
// follows the business status there. It is idempotent like enrollment (a
// replay rebuilds Location from the stored body). No free seat (all taken
// or held): 409 intensive_full.
//
// POST /webhooks/payments is the provider's, not a user's: it carries no
// token, and the body's exact bytes are verified against
// X-Sandbox-Signature by package purchase. A bad or stale signature is 401
// invalid_signature; a duplicate event answers 200 and changes nothing; a
// 5xx means only that our side failed, so the provider retries.
//
// # Exports and operations
//
// An export is accepted, not done (docs/principles.md §1.5): POST
// /classes/{class_id}/exports (the class's teacher; body {} or absent)
// writes a pending operation and its job in one transaction and answers 202
// {operation_id, kind "roster_export", status "pending"} with Location:
// /operations/{id}. GET /operations/{id} shows the operation to the user
// who asked, and to nobody else (404 operation_not_found): its status
// (pending, running, succeeded, failed), result {url, rows, expires_at}
// once it succeeded (the URL works without a token until expires_at),
// error {code, message} once it failed, and the history of its statuses.
// GET /operations lists the caller's own operations, newest first, a page
// of limit (1..100, default 20) at a time, optionally of one kind
// (roster_export, teacher_report: the nightly reports the schedule asks
// for on a teacher's behalf); next_cursor fetches the next page. A kind,
// limit or cursor it cannot use is 400 validation_failed naming it.
//
// # Logs
//
// One JSON line per request with request_id, method, route, status,
// duration, user_id and the class_id / enrollment_id / intensive_id /
// purchase_id / operation_id (and, for webhooks, event_id) it concerned; a 5xx adds the
// error's text. Bodies and e-mail addresses are never logged.
//
// # Concurrency
//
// A Handler holds no per-request state and is safe for concurrent use; the
// rules that concurrent requests could break (seats, one seat per student,
// one effect per key) are enforced by the store's conditional writes.
package api
