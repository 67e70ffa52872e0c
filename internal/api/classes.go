package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/obs"
)

// createClass answers POST /classes (teacher): {title, capacity, starts_at}.
// The class belongs to the caller.
func (h *Handler) createClass(ctx context.Context, r *request) (response, error) {
	var (
		title    string
		capacity int
		startsAt string
	)
	if err := decodeObject(r.body,
		field{name: "title", dst: &title, kind: "a string"},
		field{name: "capacity", dst: &capacity, kind: "an integer"},
		field{name: "starts_at", dst: &startsAt, kind: "an RFC 3339 date-time string"},
	); err != nil {
		return response{}, err
	}
	var at time.Time
	if startsAt != "" {
		var err error
		if at, err = time.Parse(time.RFC3339, startsAt); err != nil {
			return response{}, club.Invalid("starts_at", "must be an RFC 3339 date-time such as 2026-04-01T17:00:00Z")
		}
		// A valid RFC 3339 text can still lie outside what the answer (and
		// storage) can render once in UTC: 9999-12-31T23:59:59-23:59 is in
		// year 10000. Refused before anything is written.
		if at.Before(minStartsAt) || !at.Before(maxStartsAt) {
			return response{}, club.Invalid("starts_at", "must be between %s and %s", minStartsAt.Format(time.RFC3339), maxStartsAt.Add(-time.Second).Format(time.RFC3339))
		}
	}
	if err := checkText("title", title); err != nil {
		return response{}, err
	}
	c, err := class.New(h.newID(), r.caller.subject, title, capacity, at)
	if err != nil {
		return response{}, err
	}
	if err := h.classes.Create(ctx, c); err != nil {
		return response{}, fmt.Errorf("create class: %w", err)
	}
	r.annotate(obs.ClassID(c.ID()))
	return jsonResponse(http.StatusCreated, renderClass(c))
}

// The range of starts_at: no class of this club started before 2000, and
// every later instant renders as four-digit-year RFC 3339 in UTC.
var (
	minStartsAt = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	maxStartsAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// getClass answers GET /classes/{class_id} (anyone signed in).
func (h *Handler) getClass(ctx context.Context, r *request) (response, error) {
	c, err := h.classes.Get(ctx, r.params["class_id"])
	if err != nil {
		return response{}, err
	}
	return jsonResponse(http.StatusOK, renderClass(c))
}

// ownClass returns the class if the caller teaches it. A class taught by
// someone else is not_found: its roster and counters are not the caller's to
// see, and 404 does not say whether they exist.
func (h *Handler) ownClass(ctx context.Context, r *request) (class.Class, error) {
	c, err := h.classes.Get(ctx, r.params["class_id"])
	if err != nil {
		return class.Class{}, err
	}
	if c.TeacherID() != r.caller.subject {
		return class.Class{}, fmt.Errorf("class %s is taught by someone else: %w", c.ID(), club.ErrNotFound)
	}
	return c, nil
}

// roster answers GET /classes/{class_id}/roster (the class's teacher) from
// the roster projection, which lags enrollments by the pipeline's delay.
func (h *Handler) roster(ctx context.Context, r *request) (response, error) {
	c, err := h.ownClass(ctx, r)
	if err != nil {
		return response{}, err
	}
	ro, err := h.projections.Roster(ctx, c.ID())
	if err != nil {
		return response{}, err
	}
	return jsonResponse(http.StatusOK, renderRoster(ro))
}

// stats answers GET /classes/{class_id}/stats (the class's teacher) from the
// analytics counters.
func (h *Handler) stats(ctx context.Context, r *request) (response, error) {
	c, err := h.ownClass(ctx, r)
	if err != nil {
		return response{}, err
	}
	st, err := h.projections.Stats(ctx, c.ID())
	if err != nil {
		return response{}, err
	}
	return jsonResponse(http.StatusOK, renderStats(st))
}
