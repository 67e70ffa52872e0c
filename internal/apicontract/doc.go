// Package apicontract checks the HTTP API against its contract,
// api/openapi.yaml: [Load] parses and validates the document (OpenAPI 3.1,
// with kin-openapi), [Contract.Check] tells whether a response is one the
// document allows for its request (status, required headers, body schema,
// error code for the status), and [Contract.Transport] does that for every
// response an HTTP client receives from the API, which is how the end-to-end
// suite validates each answer of a stack. [Contract.Operations],
// [Contract.Open] and [Contract.ErrorCodes] let tests compare the document
// with the router and the error codes (internal/api) and with the routes
// infra/template.yaml deploys and the ones it leaves without the JWT
// authorizer (this package's tests).
//
// A request that matches no operation of the document is the template's
// $default route: its answer must be one of the document's responses for
// unknown routes (RouteNotFound, MethodNotAllowed, or the gateway's own).
//
// It is test support: no function or program imports it.
package apicontract
