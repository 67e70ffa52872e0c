package ddbfidelity

import (
	"encoding/json"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// item is a DynamoDB item in the JSON protocol's form.
type item = map[string]json.RawMessage

var (
	nameToken  = regexp.MustCompile(`#[A-Za-z0-9_]+`)
	valueToken = regexp.MustCompile(`:[A-Za-z0-9_]+`)
	listIndex  = regexp.MustCompile(`\[\s*\d+\s*\]`)
	listAppend = regexp.MustCompile(`\blist_append\s*\(`)
	clauseWord = regexp.MustCompile(`(?i)\b(SET|ADD|REMOVE|DELETE)\b`)
)

// tokens returns the #names or :values an expression uses.
func tokens(re *regexp.Regexp, exprs ...string) map[string]bool {
	out := map[string]bool{}
	for _, e := range exprs {
		for _, t := range re.FindAllString(e, -1) {
			out[t] = true
		}
	}
	return out
}

// updateClauses splits an UpdateExpression into its clauses' actions, by
// clause keyword (upper case): "SET" → ["a = :v", "b = b + :one"].
func updateClauses(expr string) map[string][]string {
	out := map[string][]string{}
	locs := clauseWord.FindAllStringIndex(expr, -1)
	for i, loc := range locs {
		end := len(expr)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		word := strings.ToUpper(expr[loc[0]:loc[1]])
		out[word] = append(out[word], splitTop(expr[loc[1]:end], ',')...)
	}
	return out
}

// splitTop splits s on sep outside parentheses, trimming each part.
func splitTop(s string, seps ...byte) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth == 0 && strings.IndexByte(string(seps), c) >= 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if p := strings.TrimSpace(s[start:]); p != "" {
		out = append(out, p)
	}
	return out
}

// arithmetic finds the arithmetic of an UpdateExpression's ADD clause
// (add) or SET clause (!add): the operand values (":v") and the attribute
// paths whose stored numbers take part (ADD's targets, the paths added to or
// subtracted from in SET).
func arithmetic(expr string, add bool) (values, paths []string) {
	cl := updateClauses(expr)
	if add {
		for _, a := range cl["ADD"] {
			f := strings.Fields(a)
			if len(f) == 2 {
				paths = append(paths, f[0])
				values = append(values, f[1])
			}
		}
		return values, paths
	}
	for _, a := range cl["SET"] {
		eq := strings.IndexByte(a, '=')
		if eq < 0 {
			continue
		}
		rhs := a[eq+1:]
		ops := splitTop(rhs, '+', '-')
		if len(ops) < 2 {
			continue
		}
		for _, op := range ops {
			if strings.HasPrefix(op, "if_not_exists(") {
				inner := splitTop(strings.TrimSuffix(strings.TrimPrefix(op, "if_not_exists("), ")"), ',')
				if len(inner) == 2 {
					paths = append(paths, inner[0])
					values = append(values, inner[1])
				}
				continue
			}
			if strings.HasPrefix(op, ":") {
				values = append(values, op)
			} else {
				paths = append(paths, op)
			}
		}
	}
	return values, paths
}

// exactInFloat says whether the number n is computed exactly in binary
// floating point: an integer of at most 2^53 in magnitude.
func exactInFloat(n string) bool {
	r, ok := new(big.Rat).SetString(n)
	if !ok || !r.IsInt() {
		return false
	}
	lim := new(big.Int).Lsh(big.NewInt(1), 53)
	return r.Num().CmpAbs(lim) <= 0
}

// pathStep is one step of a document path: a name or a list index.
type pathStep struct {
	name  string
	index int // -1 for a name
}

// parsePath parses a document path ("m.a", "#l[1]", "top"), resolving
// #names through names.
func parsePath(p string, names map[string]string) ([]pathStep, bool) {
	var steps []pathStep
	p = strings.TrimSpace(p)
	for _, part := range strings.Split(p, ".") {
		part = strings.TrimSpace(part)
		br := strings.IndexByte(part, '[')
		base := part
		if br >= 0 {
			base = strings.TrimSpace(part[:br])
		}
		if base == "" {
			return nil, false
		}
		if strings.HasPrefix(base, "#") {
			v, ok := names[base]
			if !ok {
				return nil, false
			}
			base = v
		}
		steps = append(steps, pathStep{name: base, index: -1})
		for br >= 0 {
			end := strings.IndexByte(part[br:], ']')
			if end < 0 {
				return nil, false
			}
			i, err := strconv.Atoi(strings.TrimSpace(part[br+1 : br+end]))
			if err != nil || i < 0 {
				return nil, false
			}
			steps = append(steps, pathStep{index: i})
			part = part[br+end+1:]
			br = strings.IndexByte(part, '[')
			if br < 0 && strings.TrimSpace(part) != "" {
				return nil, false
			}
		}
	}
	return steps, true
}

// lookup returns the value at path in it.
func lookup(it item, path []pathStep) (json.RawMessage, bool) {
	v, ok := it[path[0].name]
	if !ok {
		return nil, false
	}
	for _, st := range path[1:] {
		var av map[string]json.RawMessage
		if json.Unmarshal(v, &av) != nil {
			return nil, false
		}
		if st.index >= 0 {
			var list []json.RawMessage
			if json.Unmarshal(av["L"], &list) != nil || st.index >= len(list) {
				return nil, false
			}
			v = list[st.index]
		} else {
			var m map[string]json.RawMessage
			if json.Unmarshal(av["M"], &m) != nil {
				return nil, false
			}
			if v, ok = m[st.name]; !ok {
				return nil, false
			}
		}
	}
	return v, true
}

// projection is a tree of requested document paths.
type projection struct {
	whole    bool
	names    map[string]*projection
	elements map[int]*projection
}

func (p *projection) add(path []pathStep) {
	if p.whole {
		return
	}
	if len(path) == 0 {
		p.whole, p.names, p.elements = true, nil, nil
		return
	}
	st := path[0]
	if st.index >= 0 {
		if p.elements == nil {
			p.elements = map[int]*projection{}
		}
		if p.elements[st.index] == nil {
			p.elements[st.index] = &projection{}
		}
		p.elements[st.index].add(path[1:])
		return
	}
	if p.names == nil {
		p.names = map[string]*projection{}
	}
	if p.names[st.name] == nil {
		p.names[st.name] = &projection{}
	}
	p.names[st.name].add(path[1:])
}

// parseProjection parses a ProjectionExpression into a tree; ok false when
// a path does not parse.
func parseProjection(expr string, names map[string]string) (*projection, bool) {
	root := &projection{}
	for _, p := range splitTop(expr, ',') {
		path, ok := parsePath(p, names)
		if !ok {
			return nil, false
		}
		root.add(path)
	}
	return root, true
}

// nested says whether a ProjectionExpression reaches below the top level.
func nested(expr string) bool { return strings.ContainsAny(expr, ".[") }

// apply projects an item: the requested parts, a list's requested elements
// in index order.
func (p *projection) apply(it item) item {
	out := item{}
	for name, sub := range p.names {
		v, ok := it[name]
		if !ok {
			continue
		}
		if pv, ok := sub.value(v); ok {
			out[name] = pv
		}
	}
	return out
}

func (p *projection) value(v json.RawMessage) (json.RawMessage, bool) {
	if p.whole {
		return v, true
	}
	var av map[string]json.RawMessage
	if json.Unmarshal(v, &av) != nil {
		return nil, false
	}
	if p.names != nil {
		var m map[string]json.RawMessage
		if json.Unmarshal(av["M"], &m) != nil {
			return nil, false
		}
		sub := (&projection{names: p.names}).apply(m)
		if len(sub) == 0 {
			return nil, false
		}
		b, _ := json.Marshal(map[string]item{"M": sub})
		return b, true
	}
	var list []json.RawMessage
	if json.Unmarshal(av["L"], &list) != nil {
		return nil, false
	}
	idx := make([]int, 0, len(p.elements))
	for i := range p.elements {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var outList []json.RawMessage
	for _, i := range idx {
		if i >= len(list) {
			continue
		}
		if ev, ok := p.elements[i].value(list[i]); ok {
			outList = append(outList, ev)
		}
	}
	if len(outList) == 0 {
		return nil, false
	}
	b, _ := json.Marshal(map[string][]json.RawMessage{"L": outList})
	return b, true
}

var (
	identifier = regexp.MustCompile(`(?:[#:]|\.#?)?[A-Za-z_][A-Za-z0-9_]*`)
	notNames   = map[string]bool{"AND": true, "OR": true, "NOT": true, "BETWEEN": true, "IN": true,
		"attribute_exists": true, "attribute_not_exists": true, "attribute_type": true, "begins_with": true,
		"contains": true, "size": true}
)

// topLevelNames lists the attributes a condition or filter expression reads
// at the top level: the first name of each path, #names resolved.
func topLevelNames(expr string, names map[string]string) []string {
	var out []string
	for _, tok := range identifier.FindAllString(expr, -1) {
		switch {
		case strings.HasPrefix(tok, ":"), strings.HasPrefix(tok, "."):
		case strings.HasPrefix(tok, "#"):
			if n, ok := names[tok]; ok {
				out = append(out, n)
			}
		case notNames[strings.ToUpper(tok)] || notNames[tok]:
		default:
			out = append(out, tok)
		}
	}
	return out
}
