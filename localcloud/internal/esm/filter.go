package esm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// This file implements Lambda event filtering: the EventBridge event pattern
// language restricted to the operators Lambda documents for FilterCriteria.
//
// A pattern is a JSON object. Each key names a field of the event; its value
// is either a nested pattern (for an object field) or an array of matchers
// for a leaf field. All keys of a pattern must match (AND); the matchers of
// one leaf are alternatives (OR); "$or" takes an array of patterns of which
// one must match. A leaf matcher is one of:
//
//	"text", 12.5, true, null          exact value (numbers compare numerically)
//	{"prefix": "ab"}                  string starts with ("equals-ignore-case" form too)
//	{"suffix": "yz"}                  string ends with ("equals-ignore-case" form too)
//	{"equals-ignore-case": "Ab"}      string equal ignoring case
//	{"anything-but": "x"}             any value but x; also a list, a number,
//	                                  {"prefix": ..}, {"suffix": ..} or {"equals-ignore-case": ..}
//	{"numeric": [">", 0, "<=", 5]}    number in range; operators = < <= > >=
//	{"exists": true|false}            the leaf is present or absent
//
// Event values that are arrays match when any element matches. A field is
// absent when the event has no leaf at that path: a missing key, an object
// (exists only applies to leaves), or an empty array. Only {"exists": false}
// matches an absent field.

// maxFilters is Lambda's limit on filters per event source mapping.
const maxFilters = 5

// filterSet is the compiled FilterCriteria of a mapping: an event passes when
// any pattern matches it. An empty set passes everything.
type filterSet []*pattern

// compileFilters compiles FilterCriteria patterns (each a JSON document).
func compileFilters(patterns []string) (filterSet, error) {
	if len(patterns) > maxFilters {
		return nil, fmt.Errorf("%d filters: at most %d are allowed", len(patterns), maxFilters)
	}
	set := make(filterSet, 0, len(patterns))
	for i, p := range patterns {
		compiled, err := compilePattern([]byte(p))
		if err != nil {
			return nil, fmt.Errorf("filter %d: %w", i+1, err)
		}
		set = append(set, compiled)
	}
	return set, nil
}

// matches reports whether the event (decoded JSON, as from json.Unmarshal
// into an any) passes the filters.
func (s filterSet) matches(event any) bool {
	if len(s) == 0 {
		return true
	}
	for _, p := range s {
		if p.matches(event) {
			return true
		}
	}
	return false
}

// names reports whether any pattern of the set has a condition on the
// top-level field key, directly or in a top-level "$or" alternative. A field
// no condition names cannot change whether an event passes.
func (s filterSet) names(key string) bool {
	for _, p := range s {
		if p.names(key) {
			return true
		}
	}
	return false
}

func (p *pattern) names(key string) bool {
	for _, c := range p.conds {
		if c.key == key {
			return true
		}
		for _, alt := range c.anyOf {
			if alt.names(key) {
				return true
			}
		}
	}
	return false
}

// pattern is one compiled event pattern: every condition must hold.
type pattern struct {
	conds []condition
}

// condition is one key of a pattern. Exactly one of nested, leaf or anyOf is
// set.
type condition struct {
	key    string
	nested *pattern
	leaf   []leafMatcher
	anyOf  []*pattern // "$or"
}

// leafMatcher tests the leaf values found at a path. It receives all of
// them (none when the field is absent) so that exists can see absence.
type leafMatcher func(leaves []any) bool

// compilePattern parses and validates a pattern document.
func compilePattern(doc []byte) (*pattern, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("pattern is not valid JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("pattern has trailing data after the JSON object")
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, errors.New("pattern must be a JSON object")
	}
	if len(obj) == 0 {
		return nil, errors.New("pattern must not be empty")
	}
	return compileObject(obj, "")
}

func compileObject(obj map[string]any, path string) (*pattern, error) {
	// Sorted keys make error messages and evaluation order deterministic.
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	p := &pattern{}
	for _, key := range keys {
		at := joinPath(path, key)
		c, err := compileCondition(key, obj[key], at)
		if err != nil {
			return nil, err
		}
		p.conds = append(p.conds, c)
	}
	return p, nil
}

func compileCondition(key string, value any, at string) (condition, error) {
	if key == "$or" {
		alts, ok := value.([]any)
		if !ok || len(alts) < 2 {
			return condition{}, fmt.Errorf("%s: $or takes an array of at least two patterns", at)
		}
		c := condition{key: key}
		for i, alt := range alts {
			obj, ok := alt.(map[string]any)
			if !ok || len(obj) == 0 {
				return condition{}, fmt.Errorf("%s[%d]: each $or alternative must be a non-empty object", at, i)
			}
			sub, err := compileObject(obj, indexPath(at, i))
			if err != nil {
				return condition{}, err
			}
			c.anyOf = append(c.anyOf, sub)
		}
		return c, nil
	}
	switch v := value.(type) {
	case map[string]any:
		if len(v) == 0 {
			return condition{}, fmt.Errorf("%s: nested pattern must not be empty", at)
		}
		sub, err := compileObject(v, at)
		if err != nil {
			return condition{}, err
		}
		return condition{key: key, nested: sub}, nil
	case []any:
		if len(v) == 0 {
			return condition{}, fmt.Errorf("%s: matcher list must not be empty", at)
		}
		c := condition{key: key}
		for i, m := range v {
			lm, err := compileMatcher(m)
			if err != nil {
				return condition{}, fmt.Errorf("%s: %w", indexPath(at, i), err)
			}
			c.leaf = append(c.leaf, lm)
		}
		return c, nil
	default:
		return condition{}, fmt.Errorf("%s: a leaf must be an array of matchers, got %s", at, describe(value))
	}
}

func compileMatcher(m any) (leafMatcher, error) {
	switch v := m.(type) {
	case string, float64, bool, nil:
		return anyLeaf(func(leaf any) bool { return equalValue(leaf, v) }), nil
	case map[string]any:
		if len(v) != 1 {
			return nil, fmt.Errorf("a matcher object must have exactly one operator, got %d", len(v))
		}
		for op, arg := range v {
			return compileOperator(op, arg)
		}
	}
	return nil, fmt.Errorf("unsupported matcher %s", describe(m))
}

func compileOperator(op string, arg any) (leafMatcher, error) {
	switch op {
	case "exists":
		want, ok := arg.(bool)
		if !ok {
			return nil, errors.New("exists takes true or false")
		}
		return func(leaves []any) bool { return (len(leaves) > 0) == want }, nil
	case "prefix", "suffix":
		test, err := compileAffix(op, arg)
		if err != nil {
			return nil, err
		}
		return anyLeaf(test), nil
	case "equals-ignore-case":
		s, ok := arg.(string)
		if !ok {
			return nil, errors.New("equals-ignore-case takes a string")
		}
		return anyLeaf(func(leaf any) bool {
			ls, ok := leaf.(string)
			return ok && strings.EqualFold(ls, s)
		}), nil
	case "anything-but":
		test, err := compileAnythingBut(arg)
		if err != nil {
			return nil, err
		}
		return anyLeaf(test), nil
	case "numeric":
		test, err := compileNumeric(arg)
		if err != nil {
			return nil, err
		}
		return anyLeaf(test), nil
	default:
		return nil, fmt.Errorf("unsupported operator %q (supported: prefix, suffix, equals-ignore-case, anything-but, numeric, exists)", op)
	}
}

// compileAffix compiles the argument of prefix or suffix: a string or
// {"equals-ignore-case": string}.
func compileAffix(op string, arg any) (func(any) bool, error) {
	has := strings.HasPrefix
	if op == "suffix" {
		has = strings.HasSuffix
	}
	switch a := arg.(type) {
	case string:
		return func(leaf any) bool {
			s, ok := leaf.(string)
			return ok && has(s, a)
		}, nil
	case map[string]any:
		if s, ok := a["equals-ignore-case"].(string); ok && len(a) == 1 {
			lower := strings.ToLower(s)
			return func(leaf any) bool {
				ls, ok := leaf.(string)
				return ok && has(strings.ToLower(ls), lower)
			}, nil
		}
	}
	return nil, fmt.Errorf(`%s takes a string or {"equals-ignore-case": string}`, op)
}

// compileAnythingBut compiles the argument of anything-but: a value, a list
// of values, or an operator object whose match it negates.
func compileAnythingBut(arg any) (func(any) bool, error) {
	switch a := arg.(type) {
	case string, float64:
		return func(leaf any) bool { return !equalValue(leaf, a) }, nil
	case []any:
		if len(a) == 0 {
			return nil, errors.New("anything-but list must not be empty")
		}
		for _, v := range a {
			switch v.(type) {
			case string, float64:
			default:
				return nil, fmt.Errorf("anything-but list takes strings or numbers, got %s", describe(v))
			}
		}
		return func(leaf any) bool {
			for _, v := range a {
				if equalValue(leaf, v) {
					return false
				}
			}
			return true
		}, nil
	case map[string]any:
		if len(a) != 1 {
			return nil, errors.New("anything-but object takes exactly one operator")
		}
		for op, inner := range a {
			switch op {
			case "prefix", "suffix":
				test, err := compileAffix(op, inner)
				if err != nil {
					return nil, fmt.Errorf("anything-but: %w", err)
				}
				return stringNot(test), nil
			case "equals-ignore-case":
				values, err := stringList(inner)
				if err != nil {
					return nil, fmt.Errorf("anything-but equals-ignore-case: %w", err)
				}
				return stringNot(func(leaf any) bool {
					for _, v := range values {
						if strings.EqualFold(leaf.(string), v) {
							return true
						}
					}
					return false
				}), nil
			}
			return nil, fmt.Errorf("anything-but does not support operator %q", op)
		}
	}
	return nil, fmt.Errorf("anything-but takes a string, a number, a list or an operator object, got %s", describe(arg))
}

// stringNot negates a string test; non-string leaves never match, because
// the string operators do not apply to them.
func stringNot(test func(any) bool) func(any) bool {
	return func(leaf any) bool {
		if _, ok := leaf.(string); !ok {
			return false
		}
		return !test(leaf)
	}
}

func stringList(v any) ([]string, error) {
	switch a := v.(type) {
	case string:
		return []string{a}, nil
	case []any:
		out := make([]string, 0, len(a))
		for _, e := range a {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("takes strings, got %s", describe(e))
			}
			out = append(out, s)
		}
		if len(out) > 0 {
			return out, nil
		}
	}
	return nil, errors.New("takes a string or a non-empty list of strings")
}

// compileNumeric compiles ["=", n] or a range of one lower bound (> or >=)
// and/or one upper bound (< or <=), in either order.
func compileNumeric(arg any) (func(any) bool, error) {
	list, ok := arg.([]any)
	if !ok || len(list) == 0 || len(list)%2 != 0 || len(list) > 4 {
		return nil, errors.New(`numeric takes operator/number pairs, e.g. ["=", 5] or [">", 0, "<=", 10]`)
	}
	type bound struct {
		set       bool
		value     float64
		inclusive bool
	}
	var lower, upper bound
	var equal *float64
	for i := 0; i < len(list); i += 2 {
		op, ok := list[i].(string)
		n, isNum := list[i+1].(float64)
		if !ok || !isNum {
			return nil, fmt.Errorf("numeric: expected an operator and a number at position %d", i)
		}
		switch op {
		case "=":
			if len(list) != 2 {
				return nil, errors.New(`numeric: "=" cannot be combined with other operators`)
			}
			equal = &n
		case ">", ">=":
			if lower.set {
				return nil, errors.New("numeric: more than one lower bound")
			}
			lower = bound{set: true, value: n, inclusive: op == ">="}
		case "<", "<=":
			if upper.set {
				return nil, errors.New("numeric: more than one upper bound")
			}
			upper = bound{set: true, value: n, inclusive: op == "<="}
		default:
			return nil, fmt.Errorf("numeric: unsupported operator %q", op)
		}
	}
	return func(leaf any) bool {
		n, ok := leaf.(float64)
		if !ok {
			return false
		}
		if equal != nil {
			return n == *equal
		}
		if lower.set && (n < lower.value || (n == lower.value && !lower.inclusive)) {
			return false
		}
		if upper.set && (n > upper.value || (n == upper.value && !upper.inclusive)) {
			return false
		}
		return true
	}, nil
}

// anyLeaf lifts a per-value test to a matcher: some leaf must pass.
func anyLeaf(test func(any) bool) leafMatcher {
	return func(leaves []any) bool {
		for _, l := range leaves {
			if test(l) {
				return true
			}
		}
		return false
	}
}

// equalValue compares a leaf with a pattern value of the same JSON type.
func equalValue(leaf, want any) bool {
	switch w := want.(type) {
	case nil:
		return leaf == nil
	case string:
		s, ok := leaf.(string)
		return ok && s == w
	case float64:
		n, ok := leaf.(float64)
		return ok && n == w
	case bool:
		b, ok := leaf.(bool)
		return ok && b == w
	}
	return false
}

func (p *pattern) matches(event any) bool {
	obj, _ := event.(map[string]any)
	for _, c := range p.conds {
		if !c.matches(obj) {
			return false
		}
	}
	return true
}

func (c condition) matches(obj map[string]any) bool {
	switch {
	case c.anyOf != nil:
		for _, alt := range c.anyOf {
			if alt.matches(obj) {
				return true
			}
		}
		return false
	case c.nested != nil:
		value, present := obj[c.key]
		candidates := objectsIn(value, present)
		if len(candidates) == 0 {
			// No object here: the nested fields are all absent, which
			// only {"exists": false} conditions accept.
			return c.nested.matches(nil)
		}
		for _, o := range candidates {
			if c.nested.matches(o) {
				return true
			}
		}
		return false
	default:
		value, present := obj[c.key]
		leaves := leavesOf(value, present)
		for _, m := range c.leaf {
			if m(leaves) {
				return true
			}
		}
		return false
	}
}

// objectsIn returns the objects a nested pattern applies to: the value
// itself, or the objects inside an array.
func objectsIn(value any, present bool) []map[string]any {
	if !present {
		return nil
	}
	switch v := value.(type) {
	case map[string]any:
		return []map[string]any{v}
	case []any:
		var out []map[string]any
		for _, e := range v {
			out = append(out, objectsIn(e, true)...)
		}
		return out
	}
	return nil
}

// leavesOf returns the leaf values at a path: the value itself, or the
// non-object elements of an array (flattened).
func leavesOf(value any, present bool) []any {
	if !present {
		return nil
	}
	switch v := value.(type) {
	case map[string]any:
		return nil
	case []any:
		var out []any
		for _, e := range v {
			out = append(out, leavesOf(e, true)...)
		}
		return out
	}
	return []any{value}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func indexPath(at string, i int) string { return fmt.Sprintf("%s[%d]", at, i) }

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
