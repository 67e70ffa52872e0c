package asl

import (
	"fmt"
	"strings"
)

// filter is a JSONPath filter `?(...)`: a disjunction (||) of conjunctions
// (&&) of comparisons between a path relative to the current node (`@`) and
// a literal, or existence tests (`@.field`).
type filter struct {
	any [][]condition
}

type condition struct {
	steps []step
	op    string // "" tests existence
	value any
}

func parseFilter(body string) (*filter, error) {
	expr := strings.TrimSpace(strings.TrimPrefix(body, "?"))
	if !strings.HasPrefix(expr, "(") || !strings.HasSuffix(expr, ")") {
		return nil, fmt.Errorf("filter must be ?(...)")
	}
	expr = expr[1 : len(expr)-1]
	f := &filter{}
	for _, alt := range splitOp(expr, "||") {
		var all []condition
		for _, term := range splitOp(alt, "&&") {
			c, err := parseCondition(strings.TrimSpace(term))
			if err != nil {
				return nil, err
			}
			all = append(all, c)
		}
		f.any = append(f.any, all)
	}
	return f, nil
}

// splitOp splits s on a two-character operator outside quotes.
func splitOp(s, op string) []string {
	var parts []string
	start := 0
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
		case strings.HasPrefix(s[i:], op):
			parts = append(parts, s[start:i])
			start = i + len(op)
			i++
		}
	}
	return append(parts, s[start:])
}

var filterOps = []string{"==", "!=", "<=", ">=", "<", ">"}

func parseCondition(term string) (condition, error) {
	left, op, right := term, "", ""
	var quote byte
scan:
	for i := 0; i < len(term); i++ {
		c := term[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		default:
			for _, o := range filterOps {
				if strings.HasPrefix(term[i:], o) {
					left, op, right = strings.TrimSpace(term[:i]), o, strings.TrimSpace(term[i+len(o):])
					break scan
				}
			}
		}
	}
	rel, ok := strings.CutPrefix(left, "@")
	if !ok {
		return condition{}, fmt.Errorf("filter operand %q must start with '@'", left)
	}
	steps, err := parseSteps(rel)
	if err != nil {
		return condition{}, err
	}
	for _, s := range steps {
		if s.kind != stepField && s.kind != stepIndex {
			return condition{}, fmt.Errorf("filter operand %q must be a plain path", left)
		}
	}
	c := condition{steps: steps, op: op}
	if op == "" {
		return c, nil
	}
	switch {
	case strings.HasPrefix(right, "'") || strings.HasPrefix(right, `"`):
		c.value, err = unquote(right)
	case right == "true":
		c.value = true
	case right == "false":
		c.value = false
	case right == "null":
		c.value = nil
	default:
		c.value, err = DecodeJSON([]byte(right))
		if err == nil && !isNumber(c.value) {
			err = fmt.Errorf("bad filter literal %q", right)
		}
	}
	return c, err
}

func (f *filter) match(node any) bool {
	for _, all := range f.any {
		ok := true
		for _, c := range all {
			if !c.match(node) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (c condition) match(node any) bool {
	cur := node
	for _, s := range c.steps {
		var ok bool
		if cur, ok = selectDefinite(cur, s); !ok {
			return false
		}
	}
	switch c.op {
	case "":
		return true
	case "==":
		return jsonEqual(cur, c.value)
	case "!=":
		return !jsonEqual(cur, c.value)
	}
	if a, ok := toFloat(cur); ok {
		b, ok := toFloat(c.value)
		return ok && compare(a < b, a == b, c.op)
	}
	if a, ok := cur.(string); ok {
		b, ok := c.value.(string)
		return ok && compare(a < b, a == b, c.op)
	}
	return false
}

func compare(less, equal bool, op string) bool {
	switch op {
	case "<":
		return less
	case "<=":
		return less || equal
	case ">":
		return !less && !equal
	case ">=":
		return !less
	}
	return false
}
