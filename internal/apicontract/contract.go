package apicontract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/clubdev/club/api"
)

// Contract is the loaded document, ready to check responses against. It is
// safe for concurrent use.
type Contract struct {
	doc *openapi3.T
	// checked counts the responses Check has been given.
	checked atomic.Int64
}

// Load parses api/openapi.yaml and validates it as an OpenAPI 3.1 document.
func Load() (*Contract, error) {
	return Parse(api.OpenAPI)
}

// Parse parses and validates a document; Load parses the API's own.
func Parse(data []byte) (*Contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("apicontract: parse: %w", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("apicontract: the document is OpenAPI %s; want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("apicontract: invalid document: %w", err)
	}
	return &Contract{doc: doc}, nil
}

// Operations lists the document's operations as "METHOD /path/{param}",
// sorted.
func (c *Contract) Operations() []string {
	var ops []string
	for path, item := range c.doc.Paths.Map() {
		for method := range item.Operations() {
			ops = append(ops, method+" "+path)
		}
	}
	slices.Sort(ops)
	return ops
}

// Open lists the operations that need no token (their security is the
// empty list), as Operations names them, sorted.
func (c *Contract) Open() []string {
	var ops []string
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.Security != nil && len(*op.Security) == 0 {
				ops = append(ops, method+" "+path)
			}
		}
	}
	slices.Sort(ops)
	return ops
}

// ErrorCodes lists the values of the document's ErrorCode schema.
func (c *Contract) ErrorCodes() []string {
	var codes []string
	if s := c.doc.Components.Schemas["ErrorCode"]; s != nil && s.Value != nil {
		for _, v := range s.Value.Enum {
			codes = append(codes, fmt.Sprint(v))
		}
	}
	return codes
}

// Checked is how many responses Check has been given.
func (c *Contract) Checked() int64 { return c.checked.Load() }

// unmatched are the answers to a request that matches no operation of the
// document: the template's $default route sends it to the function, which
// answers route_not_found or method_not_allowed, unless the gateway answered
// first (its authorizer, its size limits).
var unmatched = map[int]string{
	http.StatusUnauthorized:                "Unauthorized",
	http.StatusNotFound:                    "RouteNotFound",
	http.StatusMethodNotAllowed:            "MethodNotAllowed",
	http.StatusRequestEntityTooLarge:       "PayloadTooLarge",
	http.StatusRequestHeaderFieldsTooLarge: "HeaderFieldsTooLarge",
	http.StatusInternalServerError:         "InternalError",
	http.StatusServiceUnavailable:          "Unavailable",
}

// Check reports whether a response the API gave to req is one the document
// allows: a status the request's operation lists, the headers that status
// requires, and a body of its schema. A request that matches no operation
// must have had one of the answers to unknown routes (the components
// responses RouteNotFound, MethodNotAllowed and the gateway's own).
func (c *Contract) Check(ctx context.Context, req *http.Request, status int, header http.Header, body []byte) error {
	c.checked.Add(1)
	route, params, err := c.route(req)
	if err != nil {
		return c.checkUnmatched(ctx, req, status, header, body, err)
	}
	return c.validate(ctx, req, route, params, status, header, body)
}

// route finds req's operation the way the API's router does: by the escaped
// path, segment by segment, each unescaped (a {param} takes one non-empty
// segment, so an encoded slash stays inside it; a path with an empty or
// undecodable segment is no route), then by method.
func (c *Contract) route(req *http.Request) (*routers.Route, map[string]string, error) {
	path := req.URL.RawPath // as sent, when the client kept it
	if path == "" {
		path = req.URL.EscapedPath()
	}
	if !strings.HasPrefix(path, "/") {
		// "intensives" is no route of the API's router, whatever follows.
		return nil, nil, &routers.RouteError{Reason: routers.ErrPathNotFound.Error()}
	}
	segments := strings.Split(strings.TrimPrefix(path, "/"), "/")
	pathFound := false
	for _, pattern := range c.doc.Paths.InMatchingOrder() {
		params, ok := matchPath(pattern, segments)
		if !ok {
			continue
		}
		pathFound = true
		item := c.doc.Paths.Value(pattern)
		if op := item.GetOperation(req.Method); op != nil {
			return &routers.Route{Spec: c.doc, Path: pattern, PathItem: item, Method: req.Method, Operation: op}, params, nil
		}
	}
	if pathFound {
		return nil, nil, &routers.RouteError{Reason: routers.ErrMethodNotAllowed.Error()}
	}
	return nil, nil, &routers.RouteError{Reason: routers.ErrPathNotFound.Error()}
}

func matchPath(pattern string, segments []string) (map[string]string, bool) {
	want := strings.Split(strings.TrimPrefix(pattern, "/"), "/")
	if len(want) != len(segments) {
		return nil, false
	}
	params := map[string]string{}
	for i, w := range want {
		seg, err := url.PathUnescape(segments[i])
		if err != nil || seg == "" {
			return nil, false
		}
		if name, ok := strings.CutPrefix(w, "{"); ok {
			params[strings.TrimSuffix(name, "}")] = seg
		} else if seg != w {
			return nil, false
		}
	}
	return params, true
}

func (c *Contract) checkUnmatched(ctx context.Context, req *http.Request, status int, header http.Header, body []byte, routeErr error) error {
	var re *routers.RouteError
	if !errors.As(routeErr, &re) {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, routeErr)
	}
	name, ok := unmatched[status]
	if !ok {
		return fmt.Errorf("%s %s matches no operation of the document (%s), and %d is not an answer to an unknown route: %s",
			req.Method, req.URL.Path, re.Reason, status, snippet(body))
	}
	resp := c.doc.Components.Responses[name]
	op := openapi3.NewOperation()
	op.Responses = openapi3.NewResponses(openapi3.WithStatus(status, resp))
	route := &routers.Route{Spec: c.doc, Path: req.URL.Path, Method: req.Method, Operation: op}
	return c.validate(ctx, req, route, nil, status, header, body)
}

func (c *Contract) validate(ctx context.Context, req *http.Request, route *routers.Route, params map[string]string, status int, header http.Header, body []byte) error {
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(ctx, in); err != nil {
		return fmt.Errorf("%s %s answered %d, which api/openapi.yaml does not allow for %s %s: %w\nbody: %s",
			req.Method, req.URL.Path, status, route.Method, route.Path, err, snippet(body))
	}
	return nil
}

// snippet is the start of a body, for a message.
func snippet(body []byte) string {
	const maxLen = 512
	s := strings.ToValidUTF8(string(body), "?")
	if len(s) > maxLen {
		s = s[:maxLen] + "…"
	}
	return s
}

// Transport checks every response to a request for base (the API's URL,
// "http://127.0.0.1:3000") against the contract; requests to other hosts
// pass through unchecked. A response the document does not allow becomes
// the request's error, so the caller's error check fails the test with the
// violation. next is the transport that sends the requests.
func (c *Contract) Transport(base string, next http.RoundTripper) (http.RoundTripper, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("apicontract: the API's URL %q has no host", base)
	}
	return &transport{contract: c, host: u.Host, prefix: strings.TrimSuffix(u.Path, "/"), next: next}, nil
}

type transport struct {
	contract *Contract
	host     string
	prefix   string // a stage's path in front of the routes ("" at the root)
	next     http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || req.URL.Host != t.host {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	routed := req
	if t.prefix != "" {
		routed = req.Clone(req.Context())
		routed.URL.Path = strings.TrimPrefix(req.URL.Path, t.prefix)
		routed.URL.RawPath = ""
	}
	if err := t.contract.Check(req.Context(), routed, resp.StatusCode, resp.Header, body); err != nil {
		return nil, err
	}
	return resp, nil
}
