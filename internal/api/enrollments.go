package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/clubdev/club/internal/club/enrollment"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/fault"
	"github.com/clubdev/club/internal/obs"
)

// HeaderIdempotencyKey names the client's key for a retry-safe request, and
// HeaderIdempotentReplayed marks an answer replayed from an earlier request.
const (
	HeaderIdempotencyKey     = "Idempotency-Key"
	HeaderIdempotentReplayed = "Idempotent-Replayed"
)

// enroll answers POST /classes/{class_id}/enrollments (student). The body is
// {} or absent. The answer comes right after the commit; the confirmation
// e-mail follows through the outbox and never delays it.
func (h *Handler) enroll(ctx context.Context, r *request) (response, error) {
	classID := r.params["class_id"]
	key := r.header(HeaderIdempotencyKey)
	// Checked before the body so that a client missing the key learns that
	// first, whatever else is wrong.
	if err := idempotency.ValidateKey(key); err != nil {
		return response{}, err
	}
	if err := decodeObject(r.body); err != nil {
		return response{}, err
	}
	fingerprint, err := idempotency.Fingerprint(r.method, "/classes/"+classID+"/enrollments", r.body, r.caller.subject)
	if err != nil {
		return response{}, fmt.Errorf("enroll: %w", err)
	}
	if err := fault.Inject(ctx, fault.APIBeforeCommit, key); err != nil {
		return response{}, err
	}
	res, err := h.enrollments.Enroll(ctx, enrollment.EnrollRequest{
		ClassID:            classID,
		StudentID:          r.caller.subject,
		TokenEmail:         r.caller.email,
		IdempotencyKey:     key,
		RequestFingerprint: fingerprint,
		Respond:            renderCreated,
	})
	if err != nil {
		return response{}, err
	}
	resp := response{status: res.Response.Status, body: res.Response.Body}
	if res.Replayed {
		resp.headers = map[string]string{HeaderIdempotentReplayed: "true"}
		r.annotate(slog.Bool("replayed", true))
		return resp, nil
	}
	r.annotate(obs.EnrollmentID(res.Enrollment.ID()))
	// Committed, not answered: a client that gets no answer retries with
	// the same key and gets this enrollment replayed.
	if err := fault.Inject(ctx, fault.APIAfterCommit, key); err != nil {
		return response{}, err
	}
	return resp, nil
}

// renderCreated is the answer to a new enrollment. The service stores it
// with the idempotency record, so a replay answers byte for byte the same.
func renderCreated(e enrollment.Enrollment) (idempotency.Response, error) {
	b, err := json.Marshal(renderEnrollment(e))
	if err != nil {
		return idempotency.Response{}, err
	}
	return idempotency.Response{Status: http.StatusCreated, Body: b}, nil
}

// getEnrollment answers GET /enrollments/{enrollment_id} (its student or the
// class's teacher; anyone else gets not_found).
func (h *Handler) getEnrollment(ctx context.Context, r *request) (response, error) {
	e, err := h.enrollments.Get(ctx, r.params["enrollment_id"], r.caller.subject)
	if err != nil {
		return response{}, err
	}
	return jsonResponse(http.StatusOK, renderEnrollment(e))
}

// cancelEnrollment answers DELETE /enrollments/{enrollment_id} (its student;
// another student gets not_found). Cancelling twice answers the cancelled
// enrollment again.
func (h *Handler) cancelEnrollment(ctx context.Context, r *request) (response, error) {
	e, err := h.enrollments.Cancel(ctx, r.params["enrollment_id"], r.caller.subject)
	if err != nil {
		return response{}, err
	}
	return jsonResponse(http.StatusOK, renderEnrollment(e))
}
