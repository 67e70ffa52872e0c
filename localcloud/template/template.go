package template

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/awslabs/goformation/v7/intrinsics"
)

// Options say where the stack lives. Zero fields take the defaults of the
// local cloud.
type Options struct {
	StackName string // default "club"
	Region    string // default "us-east-1"
	AccountID string // default "000000000000"
	// Parameters override the template parameters' defaults. Naming a
	// parameter the template does not declare is an error, as on AWS.
	Parameters map[string]string
	// Endpoint is the base URL of the SQS endpoint, used for queue URLs
	// (default "http://127.0.0.1:4566").
	Endpoint string
	// HTTPAPIURL, when set, is the ApiEndpoint attribute of every HTTP API
	// (the local gateway); otherwise the attribute is the AWS URL.
	HTTPAPIURL string
	// Dir is the directory CodeUri and DefinitionUri are relative to. Load
	// sets it to the template's directory; Parse defaults to the working
	// directory.
	Dir string
}

func (o Options) withDefaults() (Options, error) {
	if o.StackName == "" {
		o.StackName = "club"
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.AccountID == "" {
		o.AccountID = "000000000000"
	}
	if o.Endpoint == "" {
		o.Endpoint = "http://127.0.0.1:4566"
	}
	o.Endpoint = strings.TrimRight(o.Endpoint, "/")
	if o.Dir == "" {
		o.Dir = "."
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return o, fmt.Errorf("template directory: %w", err)
	}
	o.Dir = dir
	return o, nil
}

// Load reads and parses the template at path. Relative paths inside it are
// resolved against the template's directory unless opts.Dir is set.
func Load(path string, opts Options) (*Stack, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read template: %w", err)
	}
	if opts.Dir == "" {
		opts.Dir = filepath.Dir(path)
	}
	st, err := Parse(data, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// rawTemplate is the template after short-form tags were expanded and before
// any intrinsic function was resolved.
type rawTemplate struct {
	AWSTemplateFormatVersion any
	Transform                any
	Description              string
	Metadata                 any
	Parameters               map[string]rawParameter
	Mappings                 map[string]any
	Conditions               map[string]any
	Rules                    any // validated by CloudFormation only; ignored
	Globals                  map[string]map[string]any
	Resources                map[string]*rawResource
	Outputs                  map[string]rawOutput
}

// rawResource is one entry of Resources. The resource attributes that only
// steer CloudFormation's own deployment are accepted and ignored.
type rawResource struct {
	Type                string
	Properties          map[string]any
	Metadata            map[string]any
	Condition           string
	DependsOn           any
	DeletionPolicy      string
	UpdateReplacePolicy string
	UpdatePolicy        any
	CreationPolicy      any
}

type rawParameter struct {
	Type                  string
	Default               any
	AllowedValues         []any
	AllowedPattern        string
	ConstraintDescription string
	Description           string
	MaxLength             any
	MinLength             any
	MaxValue              any
	MinValue              any
	NoEcho                any
}

type rawOutput struct {
	Description string
	Value       any
	Export      any
	Condition   string
}

const serverlessTransform = "AWS::Serverless-2016-10-31"

// Parse parses a SAM or CloudFormation template (YAML with short-form tags,
// or JSON) into a Stack. It fails on the first unsupported resource type,
// property or intrinsic function, naming the resource.
func Parse(data []byte, opts Options) (*Stack, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	t, err := readRaw(data)
	if err != nil {
		return nil, err
	}
	if err := checkTransform(t.Transform); err != nil {
		return nil, err
	}
	r := newResolver(opts, t)
	if err := r.setParameters(t.Parameters); err != nil {
		return nil, err
	}
	addImplicitResources(t)

	b := &builder{r: r, stack: &Stack{
		Name:             opts.StackName,
		Region:           opts.Region,
		AccountID:        opts.AccountID,
		Dir:              opts.Dir,
		Parameters:       r.parameterStrings(),
		NoEchoParameters: noEcho(t.Parameters),
		Outputs:          map[string]string{},
	}}
	if err := b.readGlobals(t.Globals); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(t.Resources))
	for id := range t.Resources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := b.addResource(id, t.Resources[id]); err != nil {
			return nil, err
		}
	}
	if err := b.linkHTTPAPIEvents(); err != nil {
		return nil, err
	}
	if err := b.readOutputs(t.Outputs); err != nil {
		return nil, err
	}
	return b.stack, nil
}

// readRaw expands short-form tags (!Ref, !GetAtt, !Sub, ...) into their long
// form without resolving anything, and checks the template's sections.
func readRaw(data []byte) (*rawTemplate, error) {
	processMu.Lock()
	expanded, err := intrinsics.ProcessYAML(data, &intrinsics.ProcessorOptions{NoProcess: true})
	processMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	var sections struct {
		rawTemplate
		Resources map[string]json.RawMessage
	}
	dec := json.NewDecoder(bytes.NewReader(expanded))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sections); err != nil {
		return nil, fmt.Errorf("template: %w", describeSectionError(err))
	}
	t := &sections.rawTemplate
	t.Resources = map[string]*rawResource{}
	for id, raw := range sections.Resources {
		res := &rawResource{}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(res); err != nil {
			return nil, fmt.Errorf("resource %s: %w", id, describeSectionError(err))
		}
		if res.Type == "" {
			return nil, fmt.Errorf("resource %s: no Type", id)
		}
		if res.Properties == nil {
			res.Properties = map[string]any{}
		}
		t.Resources[id] = res
	}
	if len(t.Resources) == 0 {
		return nil, errors.New("template: no Resources")
	}
	return t, nil
}

// describeSectionError names an unknown template section or resource
// attribute.
func describeSectionError(err error) error {
	const unknown = `json: unknown field "`
	if msg := err.Error(); strings.HasPrefix(msg, unknown) {
		return fmt.Errorf("unsupported key %q", strings.TrimSuffix(strings.TrimPrefix(msg, unknown), `"`))
	}
	return describeDecodeError(err)
}

// checkTransform accepts the SAM transform only: any other macro would
// rewrite the template in ways this package does not reproduce.
func checkTransform(v any) error {
	var names []any
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		names = []any{x}
	case []any:
		names = x
	default:
		return fmt.Errorf("template: Transform: expected a name or a list, got %s", describe(v))
	}
	for _, n := range names {
		if n != serverlessTransform {
			return fmt.Errorf("template: unsupported Transform %v (only %s)", n, serverlessTransform)
		}
	}
	return nil
}

// setParameters resolves each parameter: the override, else the default.
func (r *resolver) setParameters(params map[string]rawParameter) error {
	for name := range r.opts.Parameters {
		if _, ok := params[name]; !ok {
			return fmt.Errorf("parameter %s: not declared in the template", name)
		}
	}
	for name, p := range params {
		var value string
		if v, ok := r.opts.Parameters[name]; ok {
			value = v
		} else if p.Default != nil {
			s, err := defaultString(p.Default)
			if err != nil {
				return fmt.Errorf("parameter %s: Default: %w", name, err)
			}
			value = s
		} else {
			return fmt.Errorf("parameter %s: no value (no Default and no override)", name)
		}
		if len(p.AllowedValues) > 0 && !slices.ContainsFunc(p.AllowedValues, func(a any) bool {
			s, err := scalarString(a)
			return err == nil && s == value
		}) {
			return fmt.Errorf("parameter %s: value %q is not among AllowedValues", name, value)
		}
		if err := checkNumberBounds(name, p, value); err != nil {
			return err
		}
		switch {
		case p.Type == "CommaDelimitedList" || strings.HasPrefix(p.Type, "List<"):
			var list []any
			for _, s := range strings.Split(value, ",") {
				list = append(list, strings.TrimSpace(s))
			}
			r.params[name] = list
		case p.Type == "String" || p.Type == "Number" || p.Type == "":
			r.params[name] = value
		default:
			return fmt.Errorf("parameter %s: unsupported type %q", name, p.Type)
		}
	}
	return nil
}

// defaultString reads a parameter Default, which for a list parameter may
// be written as a YAML list.
func defaultString(v any) (string, error) {
	if list, ok := v.([]any); ok {
		parts := make([]string, 0, len(list))
		for _, e := range list {
			s, err := scalarString(e)
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ","), nil
	}
	return scalarString(v)
}

// noEcho lists the parameters declared NoEcho: their values are secrets that
// tools must not print (CloudFormation shows them as ****).
func noEcho(params map[string]rawParameter) map[string]bool {
	out := map[string]bool{}
	for name, p := range params {
		switch v := p.NoEcho.(type) {
		case bool:
			out[name] = v
		case string:
			out[name] = strings.EqualFold(v, "true")
		}
	}
	return out
}

func (r *resolver) parameterStrings() map[string]string {
	out := make(map[string]string, len(r.params))
	for name, v := range r.params {
		switch x := v.(type) {
		case string:
			out[name] = x
		case []any:
			parts := make([]string, 0, len(x))
			for _, e := range x {
				parts = append(parts, e.(string))
			}
			out[name] = strings.Join(parts, ",")
		}
	}
	return out
}

// implicitHTTPAPI is the logical ID SAM gives the HTTP API it creates for
// HttpApi events that name no ApiId.
const implicitHTTPAPI = "ServerlessHttpApi"

// addImplicitResources adds the resources the SAM transform would generate
// and templates may reference: the implicit ServerlessHttpApi.
func addImplicitResources(t *rawTemplate) {
	if _, ok := t.Resources[implicitHTTPAPI]; ok {
		return
	}
	for _, res := range t.Resources {
		if res.Type != typeFunction {
			continue
		}
		events, _ := res.Properties["Events"].(map[string]any)
		for _, e := range events {
			ev, _ := e.(map[string]any)
			if ev["Type"] != "HttpApi" {
				continue
			}
			props, _ := ev["Properties"].(map[string]any)
			if _, named := props["ApiId"]; !named {
				t.Resources[implicitHTTPAPI] = &rawResource{Type: typeHTTPAPI, Properties: map[string]any{}}
				return
			}
		}
	}
}

// builder turns resolved resources into the Stack model.
type builder struct {
	r     *resolver
	stack *Stack
	// globals are the resolved Globals sections by name (Function, HttpApi).
	globals map[string]map[string]any
	// httpAPIEvents remembers where each HttpApi event lives until every
	// API is known (linkHTTPAPIEvents).
	httpAPIEvents []httpAPIEventRef
}

type httpAPIEventRef struct {
	function int // index into stack.Functions
	event    int // index into its HTTPAPIEvents
	apiID    string
	explicit string // Auth.Authorizer as written
}

// addResource resolves and adds one resource, unless its Condition is false.
func (b *builder) addResource(id string, res *rawResource) error {
	kind, ok := resourceKinds[res.Type]
	if !ok {
		return fmt.Errorf("resource %s (%s): unsupported resource type", id, res.Type)
	}
	if res.Condition != "" {
		holds, err := b.r.condition(res.Condition)
		if err != nil {
			return fmt.Errorf("resource %s (%s): %w", id, res.Type, err)
		}
		if !holds {
			return nil
		}
	}
	refs, err := b.r.resourceRefs(id)
	if err != nil {
		return err
	}
	resolved, err := b.r.eval(res.Properties)
	if err != nil {
		return fmt.Errorf("resource %s (%s): %w", id, res.Type, err)
	}
	props, _ := resolved.(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	if err := kind.build(b, resourceInput{id: id, res: res, props: props, refs: refs}); err != nil {
		return fmt.Errorf("resource %s (%s): %w", id, res.Type, err)
	}
	return nil
}

// resourceInput is what a resource kind's build function gets.
type resourceInput struct {
	id    string
	res   *rawResource
	props map[string]any // resolved Properties
	refs  *resourceRefs
}

func (b *builder) readOutputs(outputs map[string]rawOutput) error {
	for name, o := range outputs {
		if o.Condition != "" {
			holds, err := b.r.condition(o.Condition)
			if err != nil {
				return fmt.Errorf("output %s: %w", name, err)
			}
			if !holds {
				continue
			}
		}
		v, err := b.r.eval(o.Value)
		if err != nil {
			return fmt.Errorf("output %s: %w", name, err)
		}
		s, err := outputString(v)
		if err != nil {
			return fmt.Errorf("output %s: %w", name, err)
		}
		b.stack.Outputs[name] = s
	}
	return nil
}

// outputString turns an output value into text; a list is comma-joined, as
// CloudFormation shows it.
func outputString(v any) (string, error) {
	if list, ok := v.([]any); ok {
		return defaultString(list)
	}
	return scalarString(v)
}

// checkNumberBounds refuses, as CloudFormation does, a Number parameter's
// value that is not a number or lies outside its MinValue..MaxValue.
func checkNumberBounds(name string, p rawParameter, value string) error {
	if p.Type != "Number" {
		return nil
	}
	n, err := strconv.ParseFloat(value, 64)
	if err != nil {
		return fmt.Errorf("parameter %s: value %q is not a number", name, value)
	}
	for _, b := range []struct {
		bound any
		what  string
		out   func(n, b float64) bool
	}{
		{p.MinValue, "below MinValue", func(n, b float64) bool { return n < b }},
		{p.MaxValue, "above MaxValue", func(n, b float64) bool { return n > b }},
	} {
		if b.bound == nil {
			continue
		}
		text, err := scalarString(b.bound)
		if err != nil {
			return fmt.Errorf("parameter %s: %w", name, err)
		}
		limit, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return fmt.Errorf("parameter %s: bound %q is not a number", name, text)
		}
		if b.out(n, limit) {
			return fmt.Errorf("parameter %s: value %s is %s %s", name, value, b.what, text)
		}
	}
	return nil
}
