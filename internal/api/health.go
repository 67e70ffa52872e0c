package api

import (
	"context"
	"net/http"
)

// health answers GET /healthz. The function is ready once it runs: its
// configuration was checked at start, and a probe that read DynamoDB would
// cost a request per check without making the answer more true for the next
// request. A dependency it could not set up at start (Deps.Health: the
// webhook secret) makes it answer 503 with the error naming it.
func (h *Handler) health(ctx context.Context, _ *request) (response, error) {
	if h.healthCheck != nil {
		if err := h.healthCheck(ctx); err != nil {
			return response{}, err
		}
	}
	return jsonResponse(http.StatusOK, map[string]string{"status": "ok"})
}
