package gateway

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// segment kinds, ordered by specificity: a literal beats a variable, which
// beats a greedy variable.
type segmentKind int

const (
	greedySegment segmentKind = iota
	variableSegment
	literalSegment
)

type segment struct {
	kind segmentKind
	text string // the literal, or the variable's name
}

type route struct {
	Route
	key      string
	anyVerb  bool
	segments []segment
}

// router selects a route the way API Gateway HTTP APIs do: among the routes
// whose path and method match, the most specific wins, comparing path
// segments from the left (literal over {variable} over {greedy+}); at equal
// paths a route with the request's method beats ANY; the $default route
// catches whatever nothing else matched.
type router struct {
	routes   []*route
	fallback *route
}

var knownMethods = map[string]bool{
	"ANY": true, "GET": true, "HEAD": true, "POST": true, "PUT": true,
	"PATCH": true, "DELETE": true, "OPTIONS": true,
}

func newRouter(routes []Route) (*router, error) {
	rt := &router{}
	var errs []error
	shapes := map[string]string{} // method + path shape → route key, to reject ambiguity
	for _, r := range routes {
		if r.FunctionName == "" {
			errs = append(errs, fmt.Errorf("route %q: function name is required", r.Key()))
			continue
		}
		if r.Path == DefaultRouteKey {
			if rt.fallback != nil {
				errs = append(errs, errors.New("more than one $default route"))
				continue
			}
			rt.fallback = &route{Route: r, key: DefaultRouteKey}
			continue
		}
		method := strings.ToUpper(r.Method)
		if !knownMethods[method] {
			errs = append(errs, fmt.Errorf("route %q: unsupported method %q", r.Key(), r.Method))
			continue
		}
		segs, err := parsePath(r.Path)
		if err != nil {
			errs = append(errs, fmt.Errorf("route %q: %w", r.Key(), err))
			continue
		}
		shape := method + " " + shapeOf(segs)
		if prev, dup := shapes[shape]; dup {
			errs = append(errs, fmt.Errorf("route %q conflicts with route %q", r.Key(), prev))
			continue
		}
		shapes[shape] = r.Key()
		r.Method = method
		rt.routes = append(rt.routes, &route{Route: r, key: r.Key(), anyVerb: method == "ANY", segments: segs})
	}
	return rt, errors.Join(errs...)
}

func parsePath(path string) ([]segment, error) {
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("path %q must start with /", path)
	}
	if path == "/" {
		return nil, nil
	}
	parts := strings.Split(path[1:], "/")
	segs := make([]segment, 0, len(parts))
	names := map[string]bool{}
	for i, p := range parts {
		if !strings.HasPrefix(p, "{") || !strings.HasSuffix(p, "}") {
			if strings.ContainsAny(p, "{}") {
				return nil, fmt.Errorf("path %q: segment %q mixes text and a variable", path, p)
			}
			segs = append(segs, segment{kind: literalSegment, text: p})
			continue
		}
		name := p[1 : len(p)-1]
		kind := variableSegment
		if strings.HasSuffix(name, "+") {
			if i != len(parts)-1 {
				return nil, fmt.Errorf("path %q: greedy variable %q must be the last segment", path, p)
			}
			name = strings.TrimSuffix(name, "+")
			kind = greedySegment
		}
		if name == "" || strings.ContainsAny(name, "{}+") {
			return nil, fmt.Errorf("path %q: bad variable %q", path, p)
		}
		if names[name] {
			return nil, fmt.Errorf("path %q: variable %q appears twice", path, name)
		}
		names[name] = true
		segs = append(segs, segment{kind: kind, text: name})
	}
	return segs, nil
}

// shapeOf renders a path with variable names erased: /a/{x} and /a/{y}
// have the same shape and could never be told apart.
func shapeOf(segs []segment) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		switch s.kind {
		case literalSegment:
			b.WriteString(s.text)
		case variableSegment:
			b.WriteString("{}")
		case greedySegment:
			b.WriteString("{+}")
		}
	}
	return b.String()
}

// match returns the route for a request and its decoded path parameters, or
// nil when nothing (not even $default) matches. rawPath is the escaped path,
// so that an encoded slash stays inside its segment.
func (rt *router) match(method, rawPath string) (*route, map[string]string) {
	parts := splitPath(rawPath)
	var (
		best       *route
		bestParams map[string]string
	)
	for _, r := range rt.routes {
		if !r.anyVerb && r.Method != method {
			continue
		}
		params, ok := r.matchPath(parts)
		if !ok {
			continue
		}
		if best == nil || r.moreSpecificThan(best) {
			best, bestParams = r, params
		}
	}
	if best == nil && rt.fallback != nil {
		return rt.fallback, nil
	}
	return best, bestParams
}

func splitPath(rawPath string) []string {
	if rawPath == "" || rawPath == "/" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(rawPath, "/"), "/")
}

func (r *route) matchPath(parts []string) (map[string]string, bool) {
	var params map[string]string
	set := func(name, value string) {
		if params == nil {
			params = map[string]string{}
		}
		params[name] = value
	}
	for i, s := range r.segments {
		if s.kind == greedySegment {
			// A greedy variable takes one or more remaining segments.
			rest := parts[i:]
			if len(rest) == 0 || (len(rest) == 1 && rest[0] == "") {
				return nil, false
			}
			value, err := url.PathUnescape(strings.Join(rest, "/"))
			if err != nil {
				return nil, false
			}
			set(s.text, value)
			return params, true
		}
		if i >= len(parts) {
			return nil, false
		}
		value, err := url.PathUnescape(parts[i])
		if err != nil {
			return nil, false
		}
		switch s.kind {
		case literalSegment:
			if value != s.text {
				return nil, false
			}
		case variableSegment:
			if value == "" {
				return nil, false
			}
			set(s.text, value)
		}
	}
	return params, len(parts) == len(r.segments)
}

func (r *route) moreSpecificThan(o *route) bool {
	for i := 0; i < len(r.segments) && i < len(o.segments); i++ {
		if r.segments[i].kind != o.segments[i].kind {
			return r.segments[i].kind > o.segments[i].kind
		}
	}
	// Two routes matching the same path with equal segment kinds have the
	// same length (a greedy variable can only be last), so only the method
	// is left to compare.
	return !r.anyVerb && o.anyVerb
}
