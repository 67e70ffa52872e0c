package template

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/awslabs/goformation/v7/intrinsics"
)

// noValue is what Ref AWS::NoValue resolves to while intrinsics are being
// processed; stripNoValue then removes the property or list element holding
// it, which is what CloudFormation does.
const noValue = "\x00AWS::NoValue\x00"

// resolver resolves intrinsic functions against one template. Physical names
// and attributes are computed lazily and memoised, so a Ref may point at any
// resource regardless of declaration order; cycles are reported.
//
// A resolver is not safe for concurrent use; Parse owns one.
type resolver struct {
	opts       Options
	resources  map[string]*rawResource
	params     map[string]any // string or []any of strings
	mappings   map[string]any
	conditions map[string]any

	condValues map[string]bool
	condBusy   map[string]bool
	refs       map[string]*resourceRefs
	refsBusy   map[string]bool
}

// resourceRefs is what Ref and Fn::GetAtt return for one resource.
type resourceRefs struct {
	ref   string
	attrs map[string]string
}

func newResolver(opts Options, t *rawTemplate) *resolver {
	return &resolver{
		opts:       opts,
		resources:  t.Resources,
		params:     map[string]any{},
		mappings:   t.Mappings,
		conditions: t.Conditions,
		condValues: map[string]bool{},
		condBusy:   map[string]bool{},
		refs:       map[string]*resourceRefs{},
		refsBusy:   map[string]bool{},
	}
}

// processMu serialises calls into goformation's intrinsics package, which
// (re)registers its YAML tag resolvers in a package-level map on every
// ProcessYAML call.
var processMu sync.Mutex

// eval resolves every intrinsic function inside v, a value decoded from the
// template's long-form JSON.
func (r *resolver) eval(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	// Handlers cannot return errors, so each evaluation collects them here;
	// after the first one the remaining handlers short-circuit, so only the
	// root cause is reported.
	var errs []error
	out, err := intrinsics.ProcessJSON(data, &intrinsics.ProcessorOptions{
		IntrinsicHandlerOverrides: r.handlers(&errs),
	})
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errs[0]
	}
	var res any
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, err
	}
	return stripNoValue(res), nil
}

// handlers maps every intrinsic function goformation knows to ours, so that
// none of its placeholder defaults (which return nil or sample values) is
// ever used.
func (r *resolver) handlers(errs *[]error) map[string]intrinsics.IntrinsicHandler {
	wrap := func(fn func(any) (any, error)) intrinsics.IntrinsicHandler {
		return func(name string, input, _ any) any {
			if len(*errs) > 0 {
				return nil
			}
			v, err := fn(input)
			if err != nil {
				*errs = append(*errs, fmt.Errorf("%s: %w", name, err))
				return nil
			}
			return v
		}
	}
	unsupported := func(any) (any, error) {
		return nil, errors.New("not supported by the local cloud")
	}
	return map[string]intrinsics.IntrinsicHandler{
		"Ref":             wrap(r.fnRef),
		"Fn::GetAtt":      wrap(r.fnGetAtt),
		"Fn::Sub":         wrap(r.fnSub),
		"Fn::Join":        wrap(fnJoin),
		"Fn::Select":      wrap(fnSelect),
		"Fn::Split":       wrap(fnSplit),
		"Fn::Base64":      wrap(fnBase64),
		"Fn::FindInMap":   wrap(r.fnFindInMap),
		"Fn::GetAZs":      wrap(r.fnGetAZs),
		"Fn::If":          wrap(r.fnIf),
		"Fn::Equals":      wrap(fnEquals),
		"Fn::Not":         wrap(r.fnNot),
		"Fn::And":         wrap(r.fnAnd),
		"Fn::Or":          wrap(r.fnOr),
		"Fn::ImportValue": wrap(unsupported),
		"Fn::Cidr":        wrap(unsupported),
		"Fn::Transform":   wrap(unsupported),
	}
}

// stripNoValue removes map entries and list elements that resolved to
// AWS::NoValue.
func stripNoValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == noValue {
				delete(x, k)
				continue
			}
			x[k] = stripNoValue(e)
		}
	case []any:
		out := x[:0]
		for _, e := range x {
			if e != noValue {
				out = append(out, stripNoValue(e))
			}
		}
		return out
	}
	return v
}

// pseudo returns the value of a pseudo parameter.
func (r *resolver) pseudo(name string) (any, bool) {
	switch name {
	case "AWS::Region":
		return r.opts.Region, true
	case "AWS::AccountId":
		return r.opts.AccountID, true
	case "AWS::StackName":
		return r.opts.StackName, true
	case "AWS::StackId":
		return fmt.Sprintf("arn:aws:cloudformation:%s:%s:stack/%s/00000000-0000-0000-0000-000000000000",
			r.opts.Region, r.opts.AccountID, r.opts.StackName), true
	case "AWS::Partition":
		return "aws", true
	case "AWS::URLSuffix":
		return "amazonaws.com", true
	case "AWS::NotificationARNs":
		return []any{}, true
	case "AWS::NoValue":
		return noValue, true
	}
	return nil, false
}

func (r *resolver) fnRef(input any) (any, error) {
	name, ok := input.(string)
	if !ok {
		return nil, fmt.Errorf("expected a name, got %s", describe(input))
	}
	return r.ref(name)
}

func (r *resolver) ref(name string) (any, error) {
	if v, ok := r.pseudo(name); ok {
		return v, nil
	}
	if v, ok := r.params[name]; ok {
		return v, nil
	}
	if _, ok := r.resources[name]; ok {
		refs, err := r.resourceRefs(name)
		if err != nil {
			return nil, err
		}
		return refs.ref, nil
	}
	return nil, fmt.Errorf("unknown parameter or resource %q", name)
}

func (r *resolver) fnGetAtt(input any) (any, error) {
	var id, attr string
	switch v := input.(type) {
	case string: // short form !GetAtt Resource.Attribute
		id, attr, _ = strings.Cut(v, ".")
	case []any:
		if len(v) == 2 {
			id, _ = v[0].(string)
			attr, _ = v[1].(string)
		}
	}
	if id == "" || attr == "" {
		return nil, fmt.Errorf("expected [resource, attribute], got %s", describe(input))
	}
	return r.getAtt(id, attr)
}

func (r *resolver) getAtt(id, attr string) (string, error) {
	res, ok := r.resources[id]
	if !ok {
		return "", fmt.Errorf("unknown resource %q", id)
	}
	refs, err := r.resourceRefs(id)
	if err != nil {
		return "", err
	}
	v, ok := refs.attrs[attr]
	if !ok {
		return "", fmt.Errorf("resource %s (%s) has no attribute %q", id, res.Type, attr)
	}
	return v, nil
}

// subVar matches ${Name}, ${Resource.Attribute} and the literal ${!Text}.
var subVar = regexp.MustCompile(`\$\{([^}]*)\}`)

func (r *resolver) fnSub(input any) (any, error) {
	var (
		text string
		vars map[string]any
	)
	switch v := input.(type) {
	case string:
		text = v
	case []any:
		if len(v) != 2 {
			return nil, fmt.Errorf("expected [text, variables], got %d elements", len(v))
		}
		s, ok := v[0].(string)
		m, ok2 := v[1].(map[string]any)
		if !ok || !ok2 {
			return nil, errors.New("expected [text, variables]")
		}
		text, vars = s, m
	default:
		return nil, fmt.Errorf("expected text, got %s", describe(input))
	}
	var firstErr error
	out := subVar.ReplaceAllStringFunc(text, func(m string) string {
		name := m[2 : len(m)-1]
		if strings.HasPrefix(name, "!") {
			return "${" + name[1:] + "}"
		}
		if firstErr != nil {
			return m
		}
		s, err := r.subValue(strings.TrimSpace(name), vars)
		if err != nil {
			firstErr = fmt.Errorf("${%s}: %w", name, err)
		}
		return s
	})
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

func (r *resolver) subValue(name string, vars map[string]any) (string, error) {
	var (
		v   any
		err error
	)
	if x, ok := vars[name]; ok {
		v = x
	} else if id, attr, ok := strings.Cut(name, "."); ok && !strings.HasPrefix(name, "AWS::") {
		v, err = r.getAtt(id, attr)
	} else {
		v, err = r.ref(name)
	}
	if err != nil {
		return "", err
	}
	if v == noValue {
		return "", errors.New("AWS::NoValue cannot be substituted")
	}
	return scalarString(v)
}

func fnJoin(input any) (any, error) {
	args, ok := input.([]any)
	if !ok || len(args) != 2 {
		return nil, errors.New("expected [delimiter, list]")
	}
	delim, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("delimiter: expected a string, got %s", describe(args[0]))
	}
	list, ok := args[1].([]any)
	if !ok {
		return nil, fmt.Errorf("expected a list to join, got %s", describe(args[1]))
	}
	parts := make([]string, 0, len(list))
	for _, e := range list {
		s, err := scalarString(e)
		if err != nil {
			return nil, err
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, delim), nil
}

func fnSelect(input any) (any, error) {
	args, ok := input.([]any)
	if !ok || len(args) != 2 {
		return nil, errors.New("expected [index, list]")
	}
	s, err := scalarString(args[0])
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	i, err := strconv.Atoi(s)
	if err != nil {
		return nil, fmt.Errorf("index: expected an integer, got %q", s)
	}
	list, ok := args[1].([]any)
	if !ok {
		return nil, fmt.Errorf("expected a list, got %s", describe(args[1]))
	}
	if i < 0 || i >= len(list) {
		return nil, fmt.Errorf("index %d out of range for a list of %d", i, len(list))
	}
	return list[i], nil
}

func fnSplit(input any) (any, error) {
	args, ok := input.([]any)
	if !ok || len(args) != 2 {
		return nil, errors.New("expected [delimiter, text]")
	}
	delim, ok1 := args[0].(string)
	text, ok2 := args[1].(string)
	if !ok1 || !ok2 {
		return nil, errors.New("expected [delimiter, text] as strings")
	}
	var out []any
	for _, s := range strings.Split(text, delim) {
		out = append(out, s)
	}
	return out, nil
}

func fnBase64(input any) (any, error) {
	s, ok := input.(string)
	if !ok {
		return nil, fmt.Errorf("expected a string, got %s", describe(input))
	}
	return base64.StdEncoding.EncodeToString([]byte(s)), nil
}

func (r *resolver) fnFindInMap(input any) (any, error) {
	args, ok := input.([]any)
	if !ok || len(args) != 3 {
		return nil, errors.New("expected [map, top-level key, second-level key]")
	}
	var cur any = r.mappings
	for _, k := range args {
		key, err := scalarString(k)
		if err != nil {
			return nil, err
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("key %q: not a map", key)
		}
		if cur, ok = m[key]; !ok {
			return nil, fmt.Errorf("no key %q", key)
		}
	}
	return cur, nil
}

func (r *resolver) fnGetAZs(input any) (any, error) {
	region, _ := input.(string)
	if region == "" {
		region = r.opts.Region
	}
	return []any{region + "a", region + "b", region + "c"}, nil
}

func (r *resolver) fnIf(input any) (any, error) {
	args, ok := input.([]any)
	if !ok || len(args) != 3 {
		return nil, errors.New("expected [condition, value if true, value if false]")
	}
	name, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("condition: expected a name, got %s", describe(args[0]))
	}
	holds, err := r.condition(name)
	if err != nil {
		return nil, err
	}
	if holds {
		return args[1], nil
	}
	return args[2], nil
}

func fnEquals(input any) (any, error) {
	args, ok := input.([]any)
	if !ok || len(args) != 2 {
		return nil, errors.New("expected [value, value]")
	}
	// CloudFormation compares values as strings: "5" equals 5.
	a, errA := scalarString(args[0])
	b, errB := scalarString(args[1])
	if errA == nil && errB == nil {
		return a == b, nil
	}
	return reflect.DeepEqual(args[0], args[1]), nil
}

func (r *resolver) fnNot(input any) (any, error) {
	args, ok := input.([]any)
	if !ok || len(args) != 1 {
		return nil, errors.New("expected [condition]")
	}
	v, err := r.boolOperand(args[0])
	if err != nil {
		return nil, err
	}
	return !v, nil
}

func (r *resolver) fnAnd(input any) (any, error) {
	return r.fold(input, true)
}

func (r *resolver) fnOr(input any) (any, error) {
	return r.fold(input, false)
}

// fold evaluates Fn::And (all) or Fn::Or (!all) over 2 to 10 operands.
func (r *resolver) fold(input any, all bool) (any, error) {
	args, ok := input.([]any)
	if !ok || len(args) < 2 || len(args) > 10 {
		return nil, errors.New("expected a list of 2 to 10 conditions")
	}
	for _, a := range args {
		v, err := r.boolOperand(a)
		if err != nil {
			return nil, err
		}
		if v != all {
			return v, nil
		}
	}
	return all, nil
}

// boolOperand is a condition operand: a resolved boolean or
// {"Condition": "Name"}. A bare name counts as a condition reference too:
// the YAML reader does not know the short form !Condition and keeps only
// its argument.
func (r *resolver) boolOperand(v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		return r.condition(x)
	case map[string]any:
		if name, ok := x["Condition"].(string); ok && len(x) == 1 {
			return r.condition(name)
		}
	}
	return false, fmt.Errorf("expected a condition, got %s", describe(v))
}

// condition evaluates a named entry of the Conditions section.
func (r *resolver) condition(name string) (bool, error) {
	if v, ok := r.condValues[name]; ok {
		return v, nil
	}
	expr, ok := r.conditions[name]
	if !ok {
		return false, fmt.Errorf("unknown condition %q", name)
	}
	if r.condBusy[name] {
		return false, fmt.Errorf("condition %q depends on itself", name)
	}
	r.condBusy[name] = true
	defer delete(r.condBusy, name)
	v, err := r.eval(expr)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", name, err)
	}
	holds, err := r.boolOperand(v)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", name, err)
	}
	r.condValues[name] = holds
	return holds, nil
}

// resourceRefs computes (once) a resource's Ref value and attributes from its
// physical name. Nothing here depends on the resource existing, which is
// what lets every reference resolve before anything is created.
func (r *resolver) resourceRefs(id string) (*resourceRefs, error) {
	if refs, ok := r.refs[id]; ok {
		return refs, nil
	}
	if r.refsBusy[id] {
		return nil, fmt.Errorf("the name of resource %s depends on itself", id)
	}
	r.refsBusy[id] = true
	defer delete(r.refsBusy, id)

	res := r.resources[id]
	kind, ok := resourceKinds[res.Type]
	if !ok {
		return nil, fmt.Errorf("resource %s (%s): unsupported resource type", id, res.Type)
	}
	name, err := r.physicalName(id, res, kind)
	if err != nil {
		return nil, fmt.Errorf("resource %s (%s): %w", id, res.Type, err)
	}
	refs, err := kind.refs(r, id, res, name)
	if err != nil {
		return nil, fmt.Errorf("resource %s (%s): %w", id, res.Type, err)
	}
	r.refs[id] = refs
	return refs, nil
}

// physicalName is the explicit name property when the template sets one,
// else <StackName>-<LogicalId> (lower case for buckets, whose names must be).
func (r *resolver) physicalName(id string, res *rawResource, kind resourceKind) (string, error) {
	if kind.nameProperty == "" {
		return id, nil
	}
	if raw, ok := res.Properties[kind.nameProperty]; ok {
		v, err := r.eval(raw)
		if err != nil {
			return "", fmt.Errorf("property %q: %w", kind.nameProperty, err)
		}
		if v != nil {
			s, err := scalarString(v)
			if err != nil {
				return "", fmt.Errorf("property %q: %w", kind.nameProperty, err)
			}
			return s, nil
		}
	}
	name := r.opts.StackName + "-" + id
	if kind.lowerCaseName {
		name = strings.ToLower(name)
	}
	if kind.fifoProperty != "" {
		fifo, err := r.boolProperty(res, kind.fifoProperty)
		if err != nil {
			return "", err
		}
		if fifo {
			name += ".fifo" // as CloudFormation names a generated FIFO queue or topic
		}
	}
	return name, nil
}

// boolProperty resolves one boolean property of a raw resource (false when
// absent).
func (r *resolver) boolProperty(res *rawResource, prop string) (bool, error) {
	raw, ok := res.Properties[prop]
	if !ok {
		return false, nil
	}
	v, err := r.eval(raw)
	if err != nil {
		return false, fmt.Errorf("property %q: %w", prop, err)
	}
	var b boolValue
	if err := decodeStrict(v, &b); err != nil {
		return false, fmt.Errorf("property %q: %w", prop, err)
	}
	return bool(b), nil
}

func (r *resolver) arn(service, resource string) string {
	return fmt.Sprintf("arn:aws:%s:%s:%s:%s", service, r.opts.Region, r.opts.AccountID, resource)
}
