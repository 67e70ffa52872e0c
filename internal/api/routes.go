package api

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/operation"
	"github.com/clubdev/club/internal/club/purchase"
)

// route is one route of docs/principles.md §5, as the template's ApiFunction declares it.
type route struct {
	method  string
	pattern string // e.g. "/classes/{class_id}/enrollments"
	// public routes need no token; the others need a signed-in caller and,
	// when role is set, that role.
	public bool
	role   Role
	handle func(ctx context.Context, r *request) (response, error)

	segments []string // pattern split at '/', without the leading empty one
}

// routeTable matches requests to routes: by path, then by method, so that a
// known path with another method is 405, not 404.
type routeTable []*route

func newRouteTable(routes ...*route) routeTable {
	for _, rt := range routes {
		rt.segments = strings.Split(strings.TrimPrefix(rt.pattern, "/"), "/")
	}
	return routes
}

var errRouteNotFound = &httpError{status: http.StatusNotFound, code: CodeRouteNotFound, message: "no such route"}

// match returns the route of method and path (escaped, as in rawPath) and its
// path parameters, or a route_not_found / method_not_allowed error.
func (t routeTable) match(method, rawPath string) (*route, map[string]string, error) {
	segments, ok := splitPath(rawPath)
	if !ok {
		return nil, nil, errRouteNotFound
	}
	var allowed []string
	for _, rt := range t {
		params, ok := rt.matchPath(segments)
		if !ok {
			continue
		}
		if rt.method == method {
			return rt, params, nil
		}
		allowed = append(allowed, rt.method)
	}
	if len(allowed) == 0 {
		return nil, nil, errRouteNotFound
	}
	slices.Sort(allowed)
	return nil, nil, &httpError{
		status: http.StatusMethodNotAllowed, code: CodeMethodNotAllowed,
		message: "this route does not accept " + printable(method) + "; it accepts " + strings.Join(allowed, ", "),
		allow:   strings.Join(allowed, ", "),
	}
}

// splitPath splits an absolute path into its unescaped segments. Empty
// segments ("//", a trailing "/") and undecodable escapes match no route.
func splitPath(rawPath string) ([]string, bool) {
	if !strings.HasPrefix(rawPath, "/") {
		return nil, false
	}
	parts := strings.Split(rawPath[1:], "/")
	for i, p := range parts {
		s, err := url.PathUnescape(p)
		if err != nil || s == "" {
			return nil, false
		}
		parts[i] = s
	}
	return parts, true
}

func (rt *route) matchPath(segments []string) (map[string]string, bool) {
	if len(segments) != len(rt.segments) {
		return nil, false
	}
	var params map[string]string
	for i, want := range rt.segments {
		if name, ok := strings.CutPrefix(want, "{"); ok {
			if params == nil {
				params = map[string]string{}
			}
			params[strings.TrimSuffix(name, "}")] = segments[i]
			continue
		}
		if segments[i] != want {
			return nil, false
		}
	}
	return params, true
}

// printable keeps a client-supplied method readable in a message.
func printable(s string) string {
	const maxLen = 16
	s = strings.Map(func(r rune) rune {
		if r < '!' || r > '~' {
			return '?'
		}
		return r
	}, s)
	if len(s) > maxLen {
		s = s[:maxLen] + "…"
	}
	return s
}

// maxIDLength bounds ids in paths. Ids this API issues are UUIDs (36
// characters).
const maxIDLength = 128

// validID reports whether s can be an id: 1 to 128 URL-safe characters. It is
// looser than "a UUID" so that tests and tools may inject readable ids, and
// strict enough that nothing odd reaches a storage key.
func validID(s string) bool {
	if s == "" || len(s) > maxIDLength {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~:", c) >= 0) {
			return false
		}
	}
	return true
}

// checkIDs answers a path id that cannot exist as it would a missing one,
// without reading storage.
func checkIDs(params map[string]string) error {
	for name, id := range params {
		if validID(id) {
			continue
		}
		switch name {
		case "class_id":
			return classify(club.ErrClassNotFound)
		case "intensive_id":
			return classify(purchase.ErrIntensiveNotFound)
		case "operation_id":
			return classify(operation.ErrNotFound)
		}
		return classify(club.ErrNotFound)
	}
	return nil
}
