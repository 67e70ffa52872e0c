package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/profile"
	"github.com/clubdev/club/internal/club/projection"
	"github.com/clubdev/club/internal/obs"
)

// Enrollments are the enrollment use cases; *enrollment.Service implements
// them.
type Enrollments interface {
	Enroll(ctx context.Context, req enrollment.EnrollRequest) (enrollment.EnrollResult, error)
	Get(ctx context.Context, id, callerID string) (enrollment.Enrollment, error)
	Cancel(ctx context.Context, id, callerID string) (enrollment.Enrollment, error)
}

// ProfileWriter stores a user's profile; profile.Store implements it.
type ProfileWriter interface {
	Put(ctx context.Context, p profile.Profile) error
}

// Deps are the API's collaborators. Every port is required.
type Deps struct {
	Classes     class.Repository
	Enrollments Enrollments
	Projections projection.Reader
	Profiles    ProfileWriter
	Purchases   Purchases
	Webhooks    PaymentWebhooks
	Operations  Operations
	// Health, when set, is asked by GET /healthz: an *UnavailableError makes
	// it answer 503 naming what is missing (nil: always 200).
	Health func(context.Context) error
	// Logger receives one line per request; nil discards them.
	Logger *slog.Logger
	// Now and NewID default to the wall clock and random UUIDs (class ids).
	Now   func() time.Time
	NewID func() string
}

// Handler is the HTTP API as a Lambda handler for API Gateway HTTP API
// events (payload format 2.0). It is safe for concurrent use.
type Handler struct {
	classes     class.Repository
	enrollments Enrollments
	projections projection.Reader
	profiles    ProfileWriter
	purchases   Purchases
	webhooks    PaymentWebhooks
	operations  Operations
	healthCheck func(context.Context) error
	log         *slog.Logger
	now         func() time.Time
	newID       func() string
	routes      routeTable
}

// New checks d and returns the handler.
func New(d Deps) (*Handler, error) {
	var errs []error
	if d.Classes == nil {
		errs = append(errs, errors.New("api: Classes is required"))
	}
	if d.Enrollments == nil {
		errs = append(errs, errors.New("api: Enrollments is required"))
	}
	if d.Projections == nil {
		errs = append(errs, errors.New("api: Projections is required"))
	}
	if d.Profiles == nil {
		errs = append(errs, errors.New("api: Profiles is required"))
	}
	if d.Purchases == nil {
		errs = append(errs, errors.New("api: Purchases is required"))
	}
	if d.Webhooks == nil {
		errs = append(errs, errors.New("api: Webhooks is required"))
	}
	if d.Operations == nil {
		errs = append(errs, errors.New("api: Operations is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	h := &Handler{
		classes: d.Classes, enrollments: d.Enrollments, projections: d.Projections, profiles: d.Profiles,
		purchases: d.Purchases, webhooks: d.Webhooks, operations: d.Operations, healthCheck: d.Health,
		log: d.Logger, now: d.Now, newID: d.NewID,
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.newID == nil {
		h.newID = uuid.NewString
	}
	h.routes = newRouteTable(
		&route{method: http.MethodGet, pattern: "/healthz", public: true, handle: h.health},
		&route{method: http.MethodPost, pattern: "/classes", role: RoleTeacher, handle: h.createClass},
		&route{method: http.MethodGet, pattern: "/classes/{class_id}", handle: h.getClass},
		&route{method: http.MethodPost, pattern: "/classes/{class_id}/enrollments", role: RoleStudent, handle: h.enroll},
		&route{method: http.MethodGet, pattern: "/classes/{class_id}/roster", role: RoleTeacher, handle: h.roster},
		&route{method: http.MethodGet, pattern: "/classes/{class_id}/stats", role: RoleTeacher, handle: h.stats},
		&route{method: http.MethodGet, pattern: "/enrollments/{enrollment_id}", handle: h.getEnrollment},
		&route{method: http.MethodDelete, pattern: "/enrollments/{enrollment_id}", role: RoleStudent, handle: h.cancelEnrollment},
		&route{method: http.MethodPut, pattern: "/me/profile", handle: h.putProfile},
		&route{method: http.MethodPost, pattern: "/intensives", role: RoleTeacher, handle: h.createIntensive},
		&route{method: http.MethodGet, pattern: "/intensives/{intensive_id}", handle: h.getIntensive},
		&route{method: http.MethodPost, pattern: "/intensives/{intensive_id}/purchases", role: RoleStudent, handle: h.purchaseSeat},
		&route{method: http.MethodGet, pattern: "/purchases/{purchase_id}", handle: h.getPurchase},
		&route{method: http.MethodPost, pattern: "/classes/{class_id}/exports", role: RoleTeacher, handle: h.exportRoster},
		&route{method: http.MethodGet, pattern: "/operations", handle: h.listOperations},
		&route{method: http.MethodGet, pattern: "/operations/{operation_id}", handle: h.getOperation},
		// Signed by the payment provider (X-Sandbox-Signature), not by a
		// user's token: the signature is checked by the webhook handler.
		&route{method: http.MethodPost, pattern: "/webhooks/payments", public: true, handle: h.paymentWebhook},
	)
	return h, nil
}

// Routes lists the API's routes as "METHOD /pattern", in the order they are
// matched: what api/openapi.yaml must describe.
func (h *Handler) Routes() []string {
	out := make([]string, 0, len(h.routes))
	for _, rt := range h.routes {
		out = append(out, rt.method+" "+rt.pattern)
	}
	return out
}

// request is one request on its way through the handler.
type request struct {
	method   string
	route    string // the matched route, "POST /classes"; "" if none matched
	params   map[string]string
	rawQuery string            // the query string as sent, without '?'
	headers  map[string]string // names in lower case
	body     []byte
	caller   identity
	// attrs are added to the request's log line (ids of what it touched).
	attrs []slog.Attr
}

func (r *request) header(name string) string { return r.headers[strings.ToLower(name)] }

func (r *request) annotate(attrs ...slog.Attr) { r.attrs = append(r.attrs, attrs...) }

// response is a successful answer; errors become one in errorResponse.
type response struct {
	status  int
	body    []byte
	headers map[string]string
}

func jsonResponse(status int, v any) (response, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return response{}, fmt.Errorf("encode response: %w", err)
	}
	return response{status: status, body: b}, nil
}

func errorResponse(he *httpError) response {
	b, err := json.Marshal(errorDocument{Error: errorBody{Code: he.code, Message: he.message, Field: he.field}})
	if err != nil { // strings only: cannot happen
		b = []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	resp := response{status: he.status, body: b, headers: map[string]string{}}
	if he.retryAfter > 0 {
		resp.headers["Retry-After"] = strconv.Itoa(he.retryAfter)
	}
	if he.allow != "" {
		resp.headers["Allow"] = he.allow
	}
	return resp
}

// Handle answers one API Gateway request. It never returns an error: every
// failure is an HTTP answer with a JSON error body (a Lambda error would
// reach the client as a bare 500). A panic is recovered and answered 500
// "internal"; it is a bug, logged with its stack.
func (h *Handler) Handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := time.Now()
	r := &request{method: ev.RequestContext.HTTP.Method, rawQuery: ev.RawQueryString, headers: lowerKeys(ev.Headers)}
	resp, err := h.serveGuarded(ctx, &ev, r)
	h.logRequest(ctx, &ev, r, resp, err, time.Since(start))

	headers := map[string]string{"Content-Type": "application/json"}
	for k, v := range resp.headers {
		headers[k] = v
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: resp.status, Headers: headers, Body: string(resp.body)}, nil
}

// serveGuarded serves the request, mapping its error (or panic) to the
// response; err is kept for the log.
func (h *Handler) serveGuarded(ctx context.Context, ev *events.APIGatewayV2HTTPRequest, r *request) (resp response, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
			resp = errorResponse(classify(err))
		}
	}()
	resp, err = h.serve(ctx, ev, r)
	if err != nil {
		resp = errorResponse(classify(err))
	}
	return resp, err
}

// serve runs the checks every route shares, in the order their failures
// take precedence: route (404/405), identity (401), role (403), the ids in
// the path (404), body size (413); then the route's handler.
func (h *Handler) serve(ctx context.Context, ev *events.APIGatewayV2HTTPRequest, r *request) (response, error) {
	rt, params, err := h.routes.match(r.method, requestPath(ev))
	if err != nil {
		return response{}, err
	}
	r.route, r.params = rt.method+" "+rt.pattern, params
	if !rt.public {
		if r.caller, err = authenticate(ev); err != nil {
			return response{}, err
		}
		if rt.role != "" && !r.caller.has(rt.role) {
			return response{}, &httpError{status: http.StatusForbidden, code: CodeForbidden,
				message: fmt.Sprintf("this route is for the %s role", rt.role)}
		}
	}
	if err := checkIDs(params); err != nil {
		return response{}, err
	}
	if r.body, err = requestBody(ev); err != nil {
		return response{}, err
	}
	return rt.handle(ctx, r)
}

// requestPath is the request's path as sent (escaped), without the stage.
func requestPath(ev *events.APIGatewayV2HTTPRequest) string {
	if ev.RawPath != "" {
		return ev.RawPath
	}
	return ev.RequestContext.HTTP.Path
}

func lowerKeys(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[strings.ToLower(k)] = v
	}
	return out
}

// logRequest writes the request's one log line. It carries ids, never the
// body or an e-mail address; a 5xx carries the error's text at ERROR level.
func (h *Handler) logRequest(ctx context.Context, ev *events.APIGatewayV2HTTPRequest, r *request, resp response, err error, took time.Duration) {
	attrs := []slog.Attr{
		obs.RequestID(ev.RequestContext.RequestID),
		slog.String("method", printable(r.method)),
		slog.String("route", cmp.Or(r.route, "$default")),
		slog.Int("status", resp.status),
		slog.Float64("duration_ms", float64(took.Microseconds())/1000),
	}
	if r.caller.subject != "" {
		attrs = append(attrs, slog.String("user_id", r.caller.subject))
	}
	if id := r.params["class_id"]; validID(id) {
		attrs = append(attrs, obs.ClassID(id))
	}
	if id := r.params["enrollment_id"]; validID(id) {
		attrs = append(attrs, obs.EnrollmentID(id))
	}
	if id := r.params["intensive_id"]; validID(id) {
		attrs = append(attrs, slog.String(keyIntensiveID, id))
	}
	if id := r.params["purchase_id"]; validID(id) {
		attrs = append(attrs, obs.PurchaseID(id))
	}
	if id := r.params["operation_id"]; validID(id) {
		attrs = append(attrs, obs.OperationID(id))
	}
	attrs = append(attrs, r.attrs...)
	level := slog.LevelInfo
	if err != nil {
		he := classify(err)
		attrs = append(attrs, slog.String("error_code", he.code))
		if he.status >= http.StatusInternalServerError {
			level = slog.LevelError
			attrs = append(attrs, obs.Err(err))
		}
	}
	h.log.LogAttrs(ctx, level, "request", attrs...)
}
