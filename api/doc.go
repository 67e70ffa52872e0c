// Package api holds the HTTP API's contract, openapi.yaml (OpenAPI 3.1):
// every route, request and response body, status, header and error code of
// the API that internal/api implements. Package internal/apicontract loads it
// and checks responses against it; the handler's tests and the end-to-end
// suite use that to keep the document and the API the same.
package api

import _ "embed"

// OpenAPI is the document, api/openapi.yaml, as written.
//
//go:embed openapi.yaml
var OpenAPI []byte
