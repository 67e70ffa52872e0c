package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/clubdev/club/internal/club/profile"
)

// putProfile answers PUT /me/profile (anyone signed in): {email,
// display_name}, both required. It replaces the caller's profile, whose
// address the notifier uses under the current address policy.
func (h *Handler) putProfile(ctx context.Context, r *request) (response, error) {
	var email, displayName string
	if err := decodeObject(r.body,
		field{name: "email", dst: &email, kind: "a string"},
		field{name: "display_name", dst: &displayName, kind: "a string"},
	); err != nil {
		return response{}, err
	}
	if err := checkText("display_name", displayName); err != nil {
		return response{}, err
	}
	p, err := profile.New(r.caller.subject, email, displayName, h.now())
	if err != nil {
		return response{}, err
	}
	if err := h.profiles.Put(ctx, p); err != nil {
		return response{}, fmt.Errorf("put profile: %w", err)
	}
	return jsonResponse(http.StatusOK, renderProfile(p))
}
