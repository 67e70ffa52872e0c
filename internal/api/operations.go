package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/clubdev/club/internal/club/operation"
	"github.com/clubdev/club/internal/obs"
)

// Operations are the long operations' use cases; *operation.Service
// implements them.
type Operations interface {
	RequestRosterExport(ctx context.Context, req operation.ExportRequest) (operation.Operation, error)
	Get(ctx context.Context, id, callerID string) (operation.Operation, error)
	List(ctx context.Context, q operation.ListQuery) (operation.Page, error)
}

// exportRoster answers POST /classes/{class_id}/exports (the class's
// teacher; another teacher gets not_found, as for the roster). The body is
// {} or absent. The operation and its job are written in one transaction;
// the answer is 202 (accepted, not done) with Location: /operations/{id},
// where the teacher follows it to the file.
func (h *Handler) exportRoster(ctx context.Context, r *request) (response, error) {
	c, err := h.ownClass(ctx, r)
	if err != nil {
		return response{}, err
	}
	if err := decodeObject(r.body); err != nil {
		return response{}, err
	}
	op, err := h.operations.RequestRosterExport(ctx, operation.ExportRequest{ClassID: c.ID(), RequestedBy: r.caller.subject})
	if err != nil {
		return response{}, err
	}
	r.annotate(obs.OperationID(op.ID()))
	resp, err := jsonResponse(http.StatusAccepted, operationAcceptedDocument{
		OperationID: op.ID(), Kind: op.Kind(), Status: op.Status(),
	})
	if err != nil {
		return response{}, err
	}
	resp.headers = map[string]string{"Location": operationLocation(op.ID())}
	return resp, nil
}

// operationLocation is where an operation is followed.
func operationLocation(id string) string { return "/operations/" + url.PathEscape(id) }

type operationAcceptedDocument struct {
	OperationID string           `json:"operation_id"`
	Kind        operation.Kind   `json:"kind"`
	Status      operation.Status `json:"status"`
}

// getOperation answers GET /operations/{operation_id} (its creator; anyone
// else gets operation_not_found, as for a missing one).
func (h *Handler) getOperation(ctx context.Context, r *request) (response, error) {
	op, err := h.operations.Get(ctx, r.params["operation_id"], r.caller.subject)
	if err != nil {
		return response{}, fmt.Errorf("get operation: %w", err)
	}
	return jsonResponse(http.StatusOK, renderOperation(op))
}

// listOperations answers GET /operations[?kind=K][&limit=N][&cursor=C]:
// the caller's own operations, newest first, a bounded page at a time
// (limit 1..100, default 20). It is how a teacher finds the nightly reports
// the schedule asked for on their behalf (kind=teacher_report). next_cursor,
// when present, fetches the following page; a page may be short, or even
// empty, and still have one. The list is eventually consistent: an
// operation accepted a moment ago may not be in it yet (GET
// /operations/{id} is exact).
func (h *Handler) listOperations(ctx context.Context, r *request) (response, error) {
	query, err := url.ParseQuery(r.rawQuery)
	if err != nil {
		return response{}, invalidField("query", "is not a valid query string")
	}
	q := operation.ListQuery{CreatedBy: r.caller.subject, Kind: operation.Kind(query.Get("kind")), After: query.Get("cursor")}
	if v := query.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > operation.MaxListLimit {
			return response{}, invalidField("limit", fmt.Sprintf("must be a whole number between 1 and %d", operation.MaxListLimit))
		}
		q.Limit = n
	}
	page, err := h.operations.List(ctx, q)
	if err != nil {
		return response{}, err
	}
	doc := operationListDocument{Operations: make([]operationDocument, 0, len(page.Operations)), NextCursor: page.Next}
	for _, op := range page.Operations {
		doc.Operations = append(doc.Operations, renderOperation(op))
	}
	return jsonResponse(http.StatusOK, doc)
}

type operationListDocument struct {
	Operations []operationDocument `json:"operations"`
	NextCursor string              `json:"next_cursor,omitempty"`
}

type operationDocument struct {
	OperationID string                  `json:"operation_id"`
	Kind        operation.Kind          `json:"kind"`
	Status      operation.Status        `json:"status"`
	CreatedAt   time.Time               `json:"created_at"`
	UpdatedAt   time.Time               `json:"updated_at"`
	Result      *operationResult        `json:"result,omitempty"`
	Error       *operationError         `json:"error,omitempty"`
	History     []operationHistoryEntry `json:"history"`
}

type operationResult struct {
	URL       string    `json:"url"`
	Rows      int       `json:"rows"`
	ExpiresAt time.Time `json:"expires_at"`
}

type operationError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type operationHistoryEntry struct {
	Status operation.Status `json:"status"`
	At     time.Time        `json:"at"`
}

// renderOperation shows the result only when the operation succeeded and
// the error only when it failed; where the file is stored is not shown.
func renderOperation(op operation.Operation) operationDocument {
	doc := operationDocument{
		OperationID: op.ID(), Kind: op.Kind(), Status: op.Status(),
		CreatedAt: op.CreatedAt().UTC(), UpdatedAt: op.UpdatedAt().UTC(),
		History: make([]operationHistoryEntry, 0, len(op.History())),
	}
	if res, ok := op.Result(); ok {
		doc.Result = &operationResult{URL: res.URL, Rows: res.Rows, ExpiresAt: res.ExpiresAt.UTC()}
	}
	if f, ok := op.Failure(); ok {
		doc.Error = &operationError{Code: f.Code, Message: f.Message}
	}
	for _, e := range op.History() {
		doc.History = append(doc.History, operationHistoryEntry{Status: e.Status, At: e.At.UTC()})
	}
	return doc
}
