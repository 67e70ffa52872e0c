package asl

import (
	"fmt"
	"strings"
)

// Template is a compiled payload template (Parameters, ResultSelector,
// ItemSelector): a JSON value in which every object field whose name ends
// in ".$" is replaced by the value of its path or intrinsic function, under
// the name without the suffix. Objects nested in arrays are templates too.
type Template struct {
	root  tnode
	diags []Diagnostic
}

func (t *Template) fail(at, format string, args ...any) {
	t.diags = append(t.diags, Diagnostic{Code: CodeSchema, Message: fmt.Sprintf(format, args...), Location: at})
}

type tnode interface {
	eval(s *Scope) (any, error)
}

type tStatic struct{ v any }

type tObject struct{ fields []tField }

type tField struct {
	name string // without ".$"
	node tnode
}

type tArray struct{ items []tnode }

type tPath struct {
	field string
	path  *Path
}

type tCall struct {
	field string
	call  *Call
}

// ParseTemplate compiles a payload template. where names the field for
// error messages (e.g. "/States/X/Parameters").
func ParseTemplate(v any, where string) (*Template, error) {
	t, diags := parseTemplate(v, where)
	if len(diags) > 0 {
		return nil, &DefinitionError{Diagnostics: diags}
	}
	return t, nil
}

// parseTemplate compiles a template and reports every problem.
func parseTemplate(v any, where string) (*Template, []Diagnostic) {
	t := &Template{}
	t.root = t.compile(v, where)
	return t, t.diags
}

func (t *Template) compile(v any, where string) tnode {
	switch x := v.(type) {
	case map[string]any:
		obj := &tObject{}
		dyn := false
		for _, k := range sortedKeys(x) {
			val := x[k]
			name, isDyn := strings.CutSuffix(k, ".$")
			at := where + "/" + k
			if !isDyn {
				n := t.compile(val, at)
				if _, static := n.(tStatic); !static {
					dyn = true
				}
				obj.fields = append(obj.fields, tField{name: name, node: n})
				continue
			}
			dyn = true
			expr, ok := val.(string)
			if !ok {
				t.fail(at, "The value of the field %q must be a path or an intrinsic function", k)
				continue
			}
			switch {
			case IsIntrinsic(expr):
				c, err := ParseIntrinsic(expr)
				if err != nil {
					t.fail(at, "%v", err)
					continue
				}
				obj.fields = append(obj.fields, tField{name: name, node: tCall{field: k, call: c}})
			case strings.HasPrefix(expr, "$"):
				p, err := ParsePath(expr)
				if err != nil {
					t.fail(at, "%v", err)
					continue
				}
				obj.fields = append(obj.fields, tField{name: name, node: tPath{field: k, path: p}})
			default:
				t.fail(at, "The value of the field %q must be a path or an intrinsic function, not %q", k, expr)
			}
		}
		for i := 1; i < len(obj.fields); i++ {
			if obj.fields[i].name == obj.fields[i-1].name {
				t.fail(where, "The field %q is given both as a static and as a dynamic (.$) value", obj.fields[i].name)
			}
		}
		if !dyn {
			return tStatic{v}
		}
		return obj
	case []any:
		arr := &tArray{}
		dyn := false
		for i, item := range x {
			n := t.compile(item, fmt.Sprintf("%s[%d]", where, i))
			if _, static := n.(tStatic); !static {
				dyn = true
			}
			arr.items = append(arr.items, n)
		}
		if !dyn {
			return tStatic{v}
		}
		return arr
	}
	return tStatic{v}
}

// Eval builds the payload.
func (t *Template) Eval(s *Scope) (any, error) { return t.root.eval(s) }

// Fields returns the top-level field names of an object template, without
// the ".$" suffix, for checks of service integration parameters.
func (t *Template) Fields() []string {
	switch n := t.root.(type) {
	case *tObject:
		out := make([]string, len(n.fields))
		for i, f := range n.fields {
			out[i] = f.name
		}
		return out
	case tStatic:
		if m, ok := n.v.(map[string]any); ok {
			return sortedKeys(m)
		}
	}
	return nil
}

func (n tStatic) eval(*Scope) (any, error) { return n.v, nil }

func (n *tObject) eval(s *Scope) (any, error) {
	out := make(map[string]any, len(n.fields))
	for _, f := range n.fields {
		v, err := f.node.eval(s)
		if err != nil {
			return nil, err
		}
		out[f.name] = v
	}
	return out, nil
}

func (n *tArray) eval(s *Scope) (any, error) {
	out := make([]any, len(n.items))
	for i, item := range n.items {
		v, err := item.eval(s)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (n tPath) eval(s *Scope) (any, error) {
	v, ok := s.Get(n.path)
	if !ok {
		return nil, Runtimef("The JSONPath '%s' specified for the field '%s' could not be found in the input '%s'", n.path, n.field, EncodeJSON(s.root(n.path)))
	}
	return v, nil
}

func (n tCall) eval(s *Scope) (any, error) { return n.call.Eval(s) }
