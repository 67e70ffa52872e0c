package asl

import (
	"fmt"
	"strconv"
	"strings"
)

// Path is a compiled JSONPath expression: `$` for the state's input or `$$`
// for the context object, followed by field names (`.name`, `['name']`),
// array indexes (`[0]`, `[-1]`), wildcards (`.*`, `[*]`), slices (`[1:3]`,
// `[-3:]`), unions (`[0,2]`, `['a','b']`), recursive descent (`..name`) and
// filters (`[?(@.price < 10 && @.tag == 'x')]`).
//
// A path made only of field names and indexes is definite: it selects at most
// one node. Any other path is indefinite and selects a list of nodes, which
// is how AWS (through Jayway JsonPath) returns it: as an array.
type Path struct {
	src      string
	context  bool
	steps    []step
	definite bool
}

type stepKind int

const (
	stepField stepKind = iota
	stepIndex
	stepWildcard
	stepSlice
	stepNames
	stepIndexes
	stepDescend
	stepFilter
)

type step struct {
	kind    stepKind
	name    string
	index   int
	names   []string
	indexes []int
	slice   [3]*int
	sub     *step // the selector applied at every depth of a recursive descent
	filter  *filter
}

// ParsePath compiles a JSONPath. It accepts `$...` and `$$...`.
func ParsePath(src string) (*Path, error) {
	p := &Path{src: src, definite: true}
	rest, ok := strings.CutPrefix(src, "$")
	if !ok {
		return nil, fmt.Errorf("path %q must start with '$'", src)
	}
	if r, ok := strings.CutPrefix(rest, "$"); ok {
		p.context = true
		rest = r
	}
	steps, err := parseSteps(rest)
	if err != nil {
		return nil, fmt.Errorf("invalid path %q: %w", src, err)
	}
	p.steps = steps
	for _, s := range steps {
		if s.kind != stepField && s.kind != stepIndex {
			p.definite = false
		}
	}
	return p, nil
}

// MustParsePath is ParsePath for paths known to be valid.
func MustParsePath(src string) *Path {
	p, err := ParsePath(src)
	if err != nil {
		panic(err)
	}
	return p
}

// String returns the source text.
func (p *Path) String() string { return p.src }

// IsContext reports whether the path reads the context object (`$$`).
func (p *Path) IsContext() bool { return p.context }

// Definite reports whether the path selects at most one node.
func (p *Path) Definite() bool { return p.definite }

// IsReference reports whether the path is a Reference Path: only field names
// and indexes, so it names exactly one place that a value can be written to.
func (p *Path) IsReference() bool { return p.definite && !p.context }

func parseSteps(s string) ([]step, error) {
	var steps []step
	for len(s) > 0 {
		switch {
		case strings.HasPrefix(s, ".."):
			s = s[2:]
			var sub step
			var err error
			switch {
			case strings.HasPrefix(s, "*"):
				sub, s = step{kind: stepWildcard}, s[1:]
			case strings.HasPrefix(s, "["):
				sub, s, err = parseBracket(s)
			default:
				var name string
				name, s = cutName(s)
				if name == "" {
					return nil, fmt.Errorf("empty name after '..'")
				}
				sub = step{kind: stepField, name: name}
			}
			if err != nil {
				return nil, err
			}
			steps = append(steps, step{kind: stepDescend, sub: &sub})
		case s[0] == '.':
			s = s[1:]
			if strings.HasPrefix(s, "*") {
				steps = append(steps, step{kind: stepWildcard})
				s = s[1:]
				continue
			}
			var name string
			name, s = cutName(s)
			if name == "" {
				return nil, fmt.Errorf("empty field name")
			}
			steps = append(steps, step{kind: stepField, name: name})
		case s[0] == '[':
			st, rest, err := parseBracket(s)
			if err != nil {
				return nil, err
			}
			steps = append(steps, st)
			s = rest
		default:
			return nil, fmt.Errorf("unexpected %q", s)
		}
	}
	return steps, nil
}

// cutName reads a field name up to the next '.' or '['.
func cutName(s string) (name, rest string) {
	i := strings.IndexAny(s, ".[")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// parseBracket parses one `[...]` selector at the start of s.
func parseBracket(s string) (step, string, error) {
	end, err := matchBracket(s)
	if err != nil {
		return step{}, "", err
	}
	body, rest := strings.TrimSpace(s[1:end]), s[end+1:]
	switch {
	case body == "*":
		return step{kind: stepWildcard}, rest, nil
	case strings.HasPrefix(body, "?"):
		f, err := parseFilter(body)
		if err != nil {
			return step{}, "", err
		}
		return step{kind: stepFilter, filter: f}, rest, nil
	case strings.HasPrefix(body, "'") || strings.HasPrefix(body, `"`):
		var names []string
		for _, part := range splitTop(body, ',') {
			name, err := unquote(strings.TrimSpace(part))
			if err != nil {
				return step{}, "", err
			}
			names = append(names, name)
		}
		if len(names) == 1 {
			return step{kind: stepField, name: names[0]}, rest, nil
		}
		return step{kind: stepNames, names: names}, rest, nil
	case strings.Contains(body, ":"):
		parts := strings.Split(body, ":")
		if len(parts) > 3 {
			return step{}, "", fmt.Errorf("bad slice [%s]", body)
		}
		var st step
		st.kind = stepSlice
		for i, part := range parts {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			n, err := strconv.Atoi(part)
			if err != nil {
				return step{}, "", fmt.Errorf("bad slice [%s]", body)
			}
			st.slice[i] = &n
		}
		if st.slice[2] != nil && *st.slice[2] == 0 {
			return step{}, "", fmt.Errorf("slice step must not be zero")
		}
		return st, rest, nil
	case strings.Contains(body, ","):
		var idx []int
		for _, part := range strings.Split(body, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(part))
			if err != nil {
				return step{}, "", fmt.Errorf("bad index list [%s]", body)
			}
			idx = append(idx, n)
		}
		return step{kind: stepIndexes, indexes: idx}, rest, nil
	default:
		n, err := strconv.Atoi(body)
		if err != nil {
			return step{}, "", fmt.Errorf("bad index [%s]", body)
		}
		return step{kind: stepIndex, index: n}, rest, nil
	}
}

// matchBracket returns the index of the ']' closing the '[' at s[0],
// skipping quoted strings and parentheses.
func matchBracket(s string) (int, error) {
	depth := 0
	var quote byte
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ']' && depth == 0:
			return i, nil
		}
	}
	return 0, fmt.Errorf("unclosed '['")
}

// splitTop splits s on sep outside quotes and parentheses.
func splitTop(s string, sep byte) []string {
	var parts []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == sep && depth == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

func unquote(s string) (string, error) {
	if len(s) < 2 || (s[0] != '\'' && s[0] != '"') || s[len(s)-1] != s[0] {
		return "", fmt.Errorf("bad quoted name %s", s)
	}
	var b strings.Builder
	body := s[1 : len(s)-1]
	for i := 0; i < len(body); i++ {
		if body[i] == '\\' && i+1 < len(body) {
			i++
		}
		b.WriteByte(body[i])
	}
	return b.String(), nil
}

// Get evaluates the path against root (the input for `$`, the context object
// for `$$`). A definite path returns the node it names, or false if there is
// none. An indefinite path returns the array of matches, possibly empty.
func (p *Path) Get(root any) (any, bool) {
	if p.definite {
		cur := root
		for _, s := range p.steps {
			var ok bool
			if cur, ok = selectDefinite(cur, s); !ok {
				return nil, false
			}
		}
		return cur, true
	}
	nodes := []any{root}
	for i := range p.steps {
		nodes = applyStep(nodes, &p.steps[i])
	}
	if nodes == nil {
		nodes = []any{}
	}
	return nodes, true
}

func selectDefinite(cur any, s step) (any, bool) {
	switch s.kind {
	case stepField:
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok := obj[s.name]
		return v, ok
	case stepIndex:
		arr, ok := cur.([]any)
		if !ok {
			return nil, false
		}
		i := s.index
		if i < 0 {
			i += len(arr)
		}
		if i < 0 || i >= len(arr) {
			return nil, false
		}
		return arr[i], true
	}
	return nil, false
}

func applyStep(nodes []any, s *step) []any {
	var out []any
	for _, n := range nodes {
		switch s.kind {
		case stepField, stepIndex:
			if v, ok := selectDefinite(n, *s); ok {
				out = append(out, v)
			}
		case stepWildcard:
			out = append(out, children(n)...)
		case stepNames:
			if obj, ok := n.(map[string]any); ok {
				for _, name := range s.names {
					if v, ok := obj[name]; ok {
						out = append(out, v)
					}
				}
			}
		case stepIndexes:
			for _, i := range s.indexes {
				if v, ok := selectDefinite(n, step{kind: stepIndex, index: i}); ok {
					out = append(out, v)
				}
			}
		case stepSlice:
			if arr, ok := n.([]any); ok {
				out = append(out, sliceOf(arr, s.slice)...)
			}
		case stepFilter:
			for _, c := range children(n) {
				if s.filter.match(c) {
					out = append(out, c)
				}
			}
		case stepDescend:
			for _, d := range descendants(n) {
				out = append(out, applyStep([]any{d}, s.sub)...)
			}
		}
	}
	return out
}

// children returns the values of an object (in key order) or an array.
func children(n any) []any {
	switch v := n.(type) {
	case []any:
		return v
	case map[string]any:
		out := make([]any, 0, len(v))
		for _, k := range sortedKeys(v) {
			out = append(out, v[k])
		}
		return out
	}
	return nil
}

// descendants returns n and every node below it, parents first.
func descendants(n any) []any {
	out := []any{n}
	for _, c := range children(n) {
		out = append(out, descendants(c)...)
	}
	return out
}

func sliceOf(arr []any, sl [3]*int) []any {
	n := len(arr)
	stepN := 1
	if sl[2] != nil {
		stepN = *sl[2]
	}
	norm := func(p *int, def int) int {
		if p == nil {
			return def
		}
		i := *p
		if i < 0 {
			i += n
		}
		return min(max(i, 0), n)
	}
	var out []any
	if stepN > 0 {
		for i := norm(sl[0], 0); i < norm(sl[1], n); i += stepN {
			out = append(out, arr[i])
		}
		return out
	}
	start := n - 1
	if sl[0] != nil {
		start = min(norm(sl[0], 0), n-1)
	}
	end := -1
	if sl[1] != nil {
		end = norm(sl[1], 0)
	}
	for i := start; i > end; i += stepN {
		out = append(out, arr[i])
	}
	return out
}

// Set returns a copy of root with the node the path names replaced by value,
// creating missing objects along the way. Only the objects and arrays on the
// path are copied. The path must be a Reference Path.
func (p *Path) Set(root any, value any) (any, error) {
	if !p.IsReference() {
		return nil, fmt.Errorf("%s is not a reference path", p.src)
	}
	return setAt(root, p.steps, value, p.src)
}

func setAt(cur any, steps []step, value any, src string) (any, error) {
	if len(steps) == 0 {
		return value, nil
	}
	s := steps[0]
	switch s.kind {
	case stepField:
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("cannot set %q in a %s with path %s", s.name, typeName(cur), src)
		}
		child, exists := obj[s.name]
		if !exists && len(steps) > 1 {
			child = map[string]any{}
		}
		nv, err := setAt(child, steps[1:], value, src)
		if err != nil {
			return nil, err
		}
		cp := make(map[string]any, len(obj)+1)
		for k, v := range obj {
			cp[k] = v
		}
		cp[s.name] = nv
		return cp, nil
	case stepIndex:
		arr, ok := cur.([]any)
		if !ok {
			return nil, fmt.Errorf("cannot index a %s with path %s", typeName(cur), src)
		}
		i := s.index
		if i < 0 {
			i += len(arr)
		}
		if i < 0 || i >= len(arr) {
			return nil, fmt.Errorf("index %d out of range with path %s", s.index, src)
		}
		nv, err := setAt(arr[i], steps[1:], value, src)
		if err != nil {
			return nil, err
		}
		cp := append([]any(nil), arr...)
		cp[i] = nv
		return cp, nil
	}
	return nil, fmt.Errorf("%s is not a reference path", src)
}
