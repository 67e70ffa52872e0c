// Package reference renders the HTTP API's contract, api/openapi.yaml, as a
// page people read: the API reference a client developer opens on day one.
//
// The page is one self-contained HTML document. It carries the document
// (converted to JSON) and Swagger UI, the pinned bundle of npm's
// swagger-ui-dist vendored in swaggerui/ (make docs-assets fetches it again
// from npm and checks its checksum), so that it needs nothing from the
// network when it is opened — not even the validator badge: Redoc, the other
// choice, fetches its logo from a CDN, which the browser test refuses.
//
// The local HTTP API serves the page on GET /docs, and make docs writes the
// same bytes to a file. "Try it out" sends requests to the API the
// document's servers name, with a token pasted under Authorize.
package reference
