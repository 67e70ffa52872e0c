package asl

import (
	"fmt"
	"strings"
	"time"
)

// ChoiceRule is a compiled Choice Rule: either a comparison of the value at
// Variable, or a Boolean combination (And, Or, Not) of rules. Only the
// top-level rules of a Choice state have Next.
type ChoiceRule struct {
	Next     string
	Variable *Path
	Operator string // e.g. "StringEquals", "NumericLessThanPath", "IsPresent"
	Value    any    // the literal operand
	Operand  *Path  // the operand of a ...Path comparison
	And, Or  []*ChoiceRule
	Not      *ChoiceRule
}

// comparison describes one comparison operator family.
type comparison struct {
	kind string // "String", "Numeric", "Boolean", "Timestamp"
	op   string // "Equals", "LessThan", ...
}

var comparisons = func() map[string]comparison {
	m := map[string]comparison{}
	for _, kind := range []string{"String", "Numeric", "Timestamp"} {
		for _, op := range []string{"Equals", "LessThan", "GreaterThan", "LessThanEquals", "GreaterThanEquals"} {
			m[kind+op] = comparison{kind, op}
		}
	}
	m["BooleanEquals"] = comparison{"Boolean", "Equals"}
	m["StringMatches"] = comparison{"String", "Matches"}
	return m
}()

var typeTests = map[string]bool{
	"IsNull": true, "IsPresent": true, "IsNumeric": true, "IsString": true, "IsBoolean": true, "IsTimestamp": true,
}

// isOperator reports whether name is a comparison operator field of a rule.
func isOperator(name string) bool {
	if typeTests[name] {
		return true
	}
	if base, ok := strings.CutSuffix(name, "Path"); ok && base != "StringMatches" {
		_, ok := comparisons[base]
		return ok
	}
	_, ok := comparisons[name]
	return ok
}

// checkOperand validates the literal operand of an operator.
func checkOperand(op string, v any) error {
	if typeTests[op] {
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("the value of %s must be a boolean", op)
		}
		return nil
	}
	c := comparisons[op]
	switch c.kind {
	case "String":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("the value of %s must be a string", op)
		}
	case "Numeric":
		if !isNumber(v) {
			return fmt.Errorf("the value of %s must be a number", op)
		}
	case "Boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("the value of %s must be a boolean", op)
		}
	case "Timestamp":
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("the value of %s must be a timestamp string", op)
		}
		if _, ok := ParseTimestamp(s); !ok {
			return fmt.Errorf("the value of %s must be an RFC 3339 timestamp, got %q", op, s)
		}
	}
	return nil
}

// Eval reports whether the rule matches. A Variable that selects nothing is
// a States.Runtime error, except for IsPresent, as on AWS.
func (r *ChoiceRule) Eval(s *Scope) (bool, error) {
	switch {
	case r.Not != nil:
		ok, err := r.Not.Eval(s)
		return !ok, err
	case r.And != nil:
		for _, sub := range r.And {
			ok, err := sub.Eval(s)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case r.Or != nil:
		for _, sub := range r.Or {
			ok, err := sub.Eval(s)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	}
	v, present := s.Get(r.Variable)
	if r.Operator == "IsPresent" {
		return present == r.Value.(bool), nil
	}
	if !present {
		return false, Runtimef("Invalid path '%s': The choice state's condition path references an invalid value.", r.Variable)
	}
	if typeTests[r.Operator] {
		return typeTest(r.Operator, v) == r.Value.(bool), nil
	}
	operand := r.Value
	op := r.Operator
	if r.Operand != nil {
		var ok bool
		if operand, ok = s.Get(r.Operand); !ok {
			return false, Runtimef("Invalid path '%s': The choice state's condition path references an invalid value.", r.Operand)
		}
		op = strings.TrimSuffix(op, "Path")
	}
	return compareValues(comparisons[op], v, operand), nil
}

func typeTest(op string, v any) bool {
	switch op {
	case "IsNull":
		return v == nil
	case "IsNumeric":
		return isNumber(v)
	case "IsString":
		_, ok := v.(string)
		return ok
	case "IsBoolean":
		_, ok := v.(bool)
		return ok
	case "IsTimestamp":
		s, ok := v.(string)
		if !ok {
			return false
		}
		_, ok = ParseTimestamp(s)
		return ok
	}
	return false
}

// compareValues applies a comparison; values of the wrong type never match.
func compareValues(c comparison, v, operand any) bool {
	switch c.kind {
	case "String":
		a, ok1 := v.(string)
		b, ok2 := operand.(string)
		if !ok1 || !ok2 {
			return false
		}
		if c.op == "Matches" {
			return wildcardMatch(b, a)
		}
		return ordered(strings.Compare(a, b), c.op)
	case "Numeric":
		a, ok1 := toFloat(v)
		b, ok2 := toFloat(operand)
		if !ok1 || !ok2 {
			return false
		}
		switch {
		case a < b:
			return ordered(-1, c.op)
		case a > b:
			return ordered(1, c.op)
		}
		return ordered(0, c.op)
	case "Boolean":
		a, ok1 := v.(bool)
		b, ok2 := operand.(bool)
		return ok1 && ok2 && a == b
	case "Timestamp":
		as, ok1 := v.(string)
		bs, ok2 := operand.(string)
		if !ok1 || !ok2 {
			return false
		}
		a, ok1 := ParseTimestamp(as)
		b, ok2 := ParseTimestamp(bs)
		if !ok1 || !ok2 {
			return false
		}
		return ordered(a.Compare(b), c.op)
	}
	return false
}

func ordered(cmp int, op string) bool {
	switch op {
	case "Equals":
		return cmp == 0
	case "LessThan":
		return cmp < 0
	case "GreaterThan":
		return cmp > 0
	case "LessThanEquals":
		return cmp <= 0
	case "GreaterThanEquals":
		return cmp >= 0
	}
	return false
}

// wildcardMatch implements StringMatches: '*' matches any run of
// characters, '\*' a literal star and '\\' a literal backslash.
func wildcardMatch(pattern, s string) bool {
	type tok struct {
		star bool
		lit  byte
	}
	var toks []tok
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '\\' && i+1 < len(pattern):
			i++
			toks = append(toks, tok{lit: pattern[i]})
		case c == '*':
			toks = append(toks, tok{star: true})
		default:
			toks = append(toks, tok{lit: c})
		}
	}
	// Iterative glob match with backtracking to the last star.
	ti, si, starT, starS := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case ti < len(toks) && !toks[ti].star && toks[ti].lit == s[si]:
			ti++
			si++
		case ti < len(toks) && toks[ti].star:
			starT, starS = ti, si
			ti++
		case starT >= 0:
			starS++
			ti, si = starT+1, starS
		default:
			return false
		}
	}
	for ti < len(toks) && toks[ti].star {
		ti++
	}
	return ti == len(toks)
}

// ParseTimestamp parses an ASL timestamp: RFC 3339 with an uppercase T and
// a Z or numeric offset, optionally with fractional seconds.
func ParseTimestamp(s string) (time.Time, bool) {
	if !strings.Contains(s, "T") {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}
