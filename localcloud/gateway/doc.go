// Package gateway is the local cloud's API Gateway HTTP API: it serves the
// API's routes on one address (http://127.0.0.1:3000 by default), validates
// JWTs like API Gateway's JWT authorizer, and invokes each route's function
// synchronously through invoke.Invoker with a Lambda payload format 2.0
// event, translating the function's answer back into HTTP. kumo's API
// Gateway has no JWT authorizer, hence this package. It takes plain config
// structs; mapping the SAM template onto them is the caller's job.
//
// # Request handling, in order
//
//  1. A request line and header values longer than MaxHeaderBytes together
//     (10240 bytes by default, API Gateway's HTTP API quota) are answered 431
//     {"message":"Request Header Fields Too Large"}; AWS documents the quota,
//     not the status, so the status is this package's choice. Nothing else
//     runs: no token is parsed, no function invoked.
//  2. The issuer's discovery document and JWKS, when Config.Issuer is set,
//     are served under the issuer URL's path. They shadow routes with the
//     same paths.
//  3. A declared Content-Length above MaxBodyBytes (10 MB by default, API
//     Gateway's payload limit) is answered 413 at once; a chunked body is
//     cut off at the limit while reading, also 413.
//  4. GET /healthz is answered from Config.Health: 503 {"status":
//     "unavailable"} until ready, then 200 {"status":"ok"}, unless a route
//     for the path /healthz exists, in which case that route's function
//     answers, and only once ready. Catch-all routes do not capture it.
//  5. Route selection as HTTP APIs do it: the most specific matching route
//     wins, comparing segments left to right (literal over {variable} over
//     {greedy+}); at equal paths the request's own method beats ANY; the
//     $default route takes the rest; otherwise 404 {"message":"Not Found"}.
//     Paths are case-sensitive; {variable} matches one non-empty segment,
//     {greedy+} one or more; parameters are URL-decoded, and an encoded
//     slash stays inside its segment.
//  6. The route's JWT authorizer, if any (see below). A refusal is 401
//     {"message":"Unauthorized"} with a www-authenticate header and the
//     function is not invoked.
//  7. The event: version "2.0", routeKey, rawPath, rawQueryString,
//     lower-cased headers with repeated values joined by commas (plus host,
//     x-forwarded-for/-port/-proto as API Gateway adds them), cookies taken
//     out of the Cookie header one per entry, query parameters decoded and
//     joined by commas, path parameters, requestContext (account
//     000000000000, stage "$default", the apigw-requestid as requestId, time
//     and timeEpoch, http.{method,path,protocol,sourceIp,userAgent}, and for
//     authorized routes authorizer.jwt.{claims,scopes}). The body is passed
//     as text when it is valid UTF-8 and untyped or of a textual type
//     (text/*, JSON, XML, JavaScript); anything else, form posts included,
//     is base64 with isBase64Encoded true.
//  8. The function's answer: a JSON object with statusCode is the
//     structured response (headers, multiValueHeaders, cookies as
//     set-cookie, body, isBase64Encoded); any other valid JSON is, as API
//     Gateway infers it, a 200 application/json response with that JSON as
//     the body. A function error, a crash, an invalid response or an invoker
//     failure is 500 {"message":"Internal Server Error"}, with details in
//     the log and never in the response; no answer within
//     IntegrationTimeout (30 s, the HTTP API maximum) is 503
//     {"message":"Service Unavailable"}. No request waits longer.
//
// Every response carries an apigw-requestid header.
//
// # JWT authorizer
//
// As API Gateway documents it: the token comes from the identity source
// (the Authorization header by default), alone or after "Bearer ". Its
// algorithm must be RS256: "none", HMAC keyed with the public key and every
// other algorithm are refused before any key is looked up. The key is the
// one named by the token's kid in the key set at the jwks_uri of the
// issuer's OpenID discovery document, fetched over HTTP (even when the
// issuer is this server) and cached per issuer for up to an hour; an
// unknown kid triggers a refetch at most every few seconds. Then: iss must
// equal the authorizer's issuer; aud must contain one of the audiences, or,
// only when the token has no aud, client_id must be one of them; exp is
// required and must be in the future; nbf and iat, when present, may not
// be more than ClockSkew in the future. Claims reach the function as
// strings, the way API Gateway renders them: numbers in their JSON form,
// lists as "[student teacher]". Scopes come from "scope" (or "scp").
// Route authorization scopes are not modelled.
//
// A refusal answers www-authenticate "Bearer" when there is no token and
// `Bearer scope="" error="invalid_token" error_description="..."`, the
// form API Gateway uses, otherwise.
//
// # Concurrency and lifecycle
//
// A Gateway is safe for concurrent use; requests are independent, and
// key-set fetches for one issuer are serialised. Start (or StartListener)
// serves in the background; Shutdown stops accepting, waits for requests
// in flight and is idempotent.
package gateway
