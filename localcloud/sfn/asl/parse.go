package asl

import (
	"fmt"
	"math"
	"regexp"
	"strings"
)

// Diagnostic is one problem found in a definition, in the shape of the
// ValidateStateMachineDefinition API.
type Diagnostic struct {
	Code     string
	Message  string
	Location string
}

// Diagnostic codes.
const (
	CodeSchema         = "SCHEMA_VALIDATION_FAILED"
	CodeInvalidJSON    = "INVALID_JSON_DESCRIPTION"
	CodeMissingTarget  = "MISSING_TRANSITION_TARGET"
	CodeUnreachable    = "UNREACHABLE_STATE"
	CodeDuplicateState = "DUPLICATE_STATE_NAME"
	CodeMissingEnd     = "MISSING_END_STATE"
)

// MaxWaitSeconds is the largest Seconds of a Wait state AWS accepts.
const MaxWaitSeconds = 99999999

// lambdaARN is the form of a Lambda function ARN in a Task's Resource: the
// function name, optionally qualified by one version or alias. A qualifier
// that is empty, doubled or has other characters is refused, as Lambda's
// own FunctionName pattern refuses it.
var lambdaARN = regexp.MustCompile(`^arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:[0-9]{12}:function:[a-zA-Z0-9_-]{1,64}(:(\$LATEST|[a-zA-Z0-9_-]{1,128}))?$`)

// DefinitionError lists every problem of an invalid definition.
type DefinitionError struct {
	Diagnostics []Diagnostic
}

func (e *DefinitionError) Error() string {
	parts := make([]string, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		parts[i] = d.Code + ": " + d.Message
		if d.Location != "" {
			parts[i] += " at " + d.Location
		}
	}
	return "Invalid State Machine Definition: '" + strings.Join(parts, ", ") + "'"
}

// unsupported names constructs that AWS accepts but this interpreter does
// not run, so that they are rejected with a reason instead of ignored.
var unsupported = map[string]string{
	"Arguments":                      "JSONata is not supported (only JSONPath definitions run locally)",
	"Output":                         "JSONata is not supported (only JSONPath definitions run locally)",
	"Condition":                      "JSONata is not supported (only JSONPath definitions run locally)",
	"Items":                          "JSONata is not supported (only JSONPath definitions run locally)",
	"Assign":                         "variables (Assign) are not supported",
	"ItemReader":                     "Distributed Map (ItemReader) is not supported",
	"ResultWriter":                   "Distributed Map (ResultWriter) is not supported",
	"ItemBatcher":                    "Distributed Map (ItemBatcher) is not supported",
	"ToleratedFailurePercentage":     "Distributed Map (tolerated failures) is not supported",
	"ToleratedFailurePercentagePath": "Distributed Map (tolerated failures) is not supported",
	"ToleratedFailureCount":          "Distributed Map (tolerated failures) is not supported",
	"ToleratedFailureCountPath":      "Distributed Map (tolerated failures) is not supported",
	"Label":                          "Distributed Map (Label) is not supported",
	"Credentials":                    "cross-account task Credentials are not supported",
}

var common = []string{"Type", "Comment", "QueryLanguage"}

var fieldsByType = map[string][]string{
	TypePass:     {"Next", "End", "InputPath", "OutputPath", "Parameters", "ResultPath", "Result"},
	TypeTask:     {"Next", "End", "InputPath", "OutputPath", "Parameters", "ResultSelector", "ResultPath", "Retry", "Catch", "Resource", "TimeoutSeconds", "TimeoutSecondsPath", "HeartbeatSeconds", "HeartbeatSecondsPath"},
	TypeChoice:   {"InputPath", "OutputPath", "Choices", "Default"},
	TypeWait:     {"Next", "End", "InputPath", "OutputPath", "Seconds", "Timestamp", "SecondsPath", "TimestampPath"},
	TypeSucceed:  {"InputPath", "OutputPath"},
	TypeFail:     {"Error", "Cause", "ErrorPath", "CausePath"},
	TypeParallel: {"Next", "End", "InputPath", "OutputPath", "Parameters", "ResultSelector", "ResultPath", "Retry", "Catch", "Branches"},
	TypeMap:      {"Next", "End", "InputPath", "OutputPath", "Parameters", "ResultSelector", "ResultPath", "Retry", "Catch", "Iterator", "ItemProcessor", "ItemsPath", "ItemSelector", "MaxConcurrency", "MaxConcurrencyPath"},
}

// Parse parses and validates a definition. Every problem found is reported
// in one *DefinitionError; nothing unknown or unsupported is ignored.
func Parse(definition []byte) (*Definition, error) {
	v, err := DecodeJSON(definition)
	if err != nil {
		return nil, &DefinitionError{[]Diagnostic{{Code: CodeInvalidJSON, Message: "The definition is not valid JSON: " + err.Error()}}}
	}
	p := &parser{names: map[string]string{}}
	def := p.parseDefinition(v)
	if len(p.diags) > 0 {
		return nil, &DefinitionError{p.diags}
	}
	return def, nil
}

type parser struct {
	diags []Diagnostic
	names map[string]string // state name -> location, for uniqueness
}

func (p *parser) fail(code, loc, format string, args ...any) {
	p.diags = append(p.diags, Diagnostic{Code: code, Message: fmt.Sprintf(format, args...), Location: loc})
}

// object wraps a JSON object being parsed and remembers its location.
type object struct {
	p   *parser
	m   map[string]any
	loc string
}

func (p *parser) object(v any, loc, what string) *object {
	m, ok := v.(map[string]any)
	if !ok {
		p.fail(CodeSchema, loc, "%s must be a JSON object", what)
		return nil
	}
	return &object{p: p, m: m, loc: loc}
}

func (o *object) at(field string) string { return o.loc + "/" + field }

func (o *object) has(field string) bool { _, ok := o.m[field]; return ok }

// checkFields reports every field not in allowed.
func (o *object) checkFields(allowed ...[]string) {
	ok := map[string]bool{}
	for _, list := range allowed {
		for _, f := range list {
			ok[f] = true
		}
	}
	for _, k := range sortedKeys(o.m) {
		if ok[k] {
			continue
		}
		if why, known := unsupported[k]; known {
			o.p.fail(CodeSchema, o.at(k), "The field %q is not supported: %s", k, why)
		} else {
			o.p.fail(CodeSchema, o.at(k), "The field %q is not supported by Step Functions", k)
		}
	}
}

func (o *object) str(field string, required bool) (string, bool) {
	v, ok := o.m[field]
	if !ok {
		if required {
			o.p.fail(CodeSchema, o.loc, "The field %q is required", field)
		}
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		o.p.fail(CodeSchema, o.at(field), "The field %q must be a string", field)
		return "", false
	}
	return s, true
}

func (o *object) boolean(field string) (bool, bool) {
	v, ok := o.m[field]
	if !ok {
		return false, false
	}
	b, ok := v.(bool)
	if !ok {
		o.p.fail(CodeSchema, o.at(field), "The field %q must be a boolean", field)
	}
	return b, ok
}

func (o *object) integer(field string, minimum int64) (int64, bool) {
	v, ok := o.m[field]
	if !ok {
		return 0, false
	}
	n, ok := toInt(v)
	if !ok || n < minimum {
		o.p.fail(CodeSchema, o.at(field), "The field %q must be an integer >= %d", field, minimum)
		return 0, false
	}
	return n, true
}

func (o *object) number(field string, minimum float64) (float64, bool) {
	v, ok := o.m[field]
	if !ok {
		return 0, false
	}
	f, ok := toFloat(v)
	if !ok || f < minimum || math.IsInf(f, 0) {
		o.p.fail(CodeSchema, o.at(field), "The field %q must be a number >= %g", field, minimum)
		return 0, false
	}
	return f, true
}

func (o *object) path(field string) *Path {
	s, ok := o.str(field, false)
	if !ok {
		return nil
	}
	p, err := ParsePath(s)
	if err != nil {
		o.p.fail(CodeSchema, o.at(field), "%v", err)
		return nil
	}
	return p
}

func (o *object) optionalPath(field string) OptionalPath {
	if v, ok := o.m[field]; ok && v == nil {
		return OptionalPath{Null: true}
	}
	return OptionalPath{Path: o.path(field)}
}

func (o *object) resultPath(field string) ResultPath {
	if v, ok := o.m[field]; ok && v == nil {
		return ResultPath{Discard: true}
	}
	p := o.path(field)
	if p != nil && !p.IsReference() {
		o.p.fail(CodeSchema, o.at(field), "The value of %q must be a reference path (field names and indexes only), got %q", field, p)
		return ResultPath{}
	}
	return ResultPath{Path: p}
}

func (o *object) template(field string) *Template {
	v, ok := o.m[field]
	if !ok {
		return nil
	}
	t, diags := parseTemplate(v, o.at(field))
	if len(diags) > 0 {
		o.p.diags = append(o.p.diags, diags...)
		return nil
	}
	return t
}

func (o *object) expr(field string) *Expr {
	s, ok := o.str(field, false)
	if !ok {
		return nil
	}
	if IsIntrinsic(s) {
		c, err := ParseIntrinsic(s)
		if err != nil {
			o.p.fail(CodeSchema, o.at(field), "%v", err)
			return nil
		}
		return &Expr{call: c}
	}
	p, err := ParsePath(s)
	if err != nil {
		o.p.fail(CodeSchema, o.at(field), "%v", err)
		return nil
	}
	return &Expr{path: p}
}

func (o *object) exclusive(a, b string) {
	if o.has(a) && o.has(b) {
		o.p.fail(CodeSchema, o.loc, "The fields %q and %q are mutually exclusive", a, b)
	}
}

func (p *parser) parseDefinition(v any) *Definition {
	o := p.object(v, "", "The definition")
	if o == nil {
		return nil
	}
	o.loc = ""
	o.checkFields([]string{"Comment", "StartAt", "States", "Version", "TimeoutSeconds", "QueryLanguage"})
	p.checkQueryLanguage(o)
	if ver, ok := o.str("Version", false); ok && ver != "1.0" {
		p.fail(CodeSchema, "/Version", "Only Version \"1.0\" is supported, got %q", ver)
	}
	d := &Definition{}
	d.Comment, _ = o.str("Comment", false)
	d.TimeoutSeconds, _ = o.integer("TimeoutSeconds", 1)
	if m := p.parseMachine(o); m != nil {
		d.Machine = *m
	}
	return d
}

func (p *parser) checkQueryLanguage(o *object) {
	if ql, ok := o.str("QueryLanguage", false); ok && ql != "JSONPath" {
		p.fail(CodeSchema, o.at("QueryLanguage"), "QueryLanguage %q is not supported: only JSONPath definitions run locally", ql)
	}
}

// parseMachine reads StartAt and States of o and validates transitions.
func (p *parser) parseMachine(o *object) *Machine {
	m := &Machine{States: map[string]*State{}}
	m.StartAt, _ = o.str("StartAt", true)
	statesV, ok := o.m["States"]
	if !ok {
		p.fail(CodeSchema, o.loc, "The field \"States\" is required")
		return m
	}
	so := p.object(statesV, o.at("States"), "States")
	if so == nil {
		return m
	}
	if len(so.m) == 0 {
		p.fail(CodeSchema, so.loc, "States must not be empty")
	}
	for _, name := range sortedKeys(so.m) {
		loc := so.at(name)
		if prev, dup := p.names[name]; dup {
			p.fail(CodeDuplicateState, loc, "The state name %q is already used at %s; state names must be unique in the whole machine", name, prev)
		}
		p.names[name] = loc
		if len(name) == 0 || len([]rune(name)) > 80 {
			p.fail(CodeSchema, loc, "A state name must have 1 to 80 characters")
		}
		if st := p.parseState(name, so.m[name], loc); st != nil {
			m.States[name] = st
		}
	}
	if m.StartAt != "" {
		if _, ok := so.m[m.StartAt]; !ok {
			p.fail(CodeMissingTarget, o.at("StartAt"), "Missing 'StartAt' target: %s", m.StartAt)
		}
	}
	p.checkTransitions(m, so)
	return m
}

func (p *parser) checkTransitions(m *Machine, so *object) {
	targets := func(st *State) []string {
		var t []string
		if st.Next != "" {
			t = append(t, st.Next)
		}
		if st.Default != "" {
			t = append(t, st.Default)
		}
		for _, c := range st.Choices {
			t = append(t, c.Next)
		}
		for _, c := range st.Catch {
			t = append(t, c.Next)
		}
		return t
	}
	for _, name := range sortedKeys(so.m) {
		st, ok := m.States[name]
		if !ok {
			continue
		}
		for _, t := range targets(st) {
			if _, ok := so.m[t]; !ok {
				p.fail(CodeMissingTarget, so.at(name), "Missing 'Next' target: %s", t)
			}
		}
	}
	// A machine must have a terminal state (End, Succeed or Fail). AWS then
	// reports this alone, without the unreachable states of the loop.
	if len(m.States) > 0 && len(m.States) == len(so.m) {
		terminal := false
		for _, st := range m.States {
			if st.End || st.Type == TypeSucceed || st.Type == TypeFail {
				terminal = true
				break
			}
		}
		if !terminal {
			p.fail(CodeMissingEnd, "", "Workflow has no terminal state")
			return
		}
	}
	// Every state must be reachable from StartAt.
	seen := map[string]bool{}
	var visit func(string)
	visit = func(n string) {
		st, ok := m.States[n]
		if !ok || seen[n] {
			return
		}
		seen[n] = true
		for _, t := range targets(st) {
			visit(t)
		}
	}
	visit(m.StartAt)
	if _, ok := so.m[m.StartAt]; !ok {
		return
	}
	for _, name := range sortedKeys(so.m) {
		if _, parsed := m.States[name]; parsed && !seen[name] {
			p.fail(CodeUnreachable, so.at(name), "State %q is not reachable", name)
		}
	}
}

func (p *parser) parseState(name string, v any, loc string) *State {
	o := p.object(v, loc, "A state")
	if o == nil {
		return nil
	}
	typ, ok := o.str("Type", true)
	if !ok {
		return nil
	}
	fields, known := fieldsByType[typ]
	if !known {
		p.fail(CodeSchema, o.at("Type"), "The state type %q is not supported (Task, Pass, Choice, Wait, Succeed, Fail, Parallel, Map)", typ)
		return nil
	}
	o.checkFields(common, fields)
	p.checkQueryLanguage(o)
	st := &State{Name: name, Type: typ}
	st.Comment, _ = o.str("Comment", false)
	st.InputPath = o.optionalPath("InputPath")
	st.OutputPath = o.optionalPath("OutputPath")
	st.Parameters = o.template("Parameters")
	st.ResultSelector = o.template("ResultSelector")
	st.ResultPath = o.resultPath("ResultPath")

	if has(fields, "End") {
		st.Next, _ = o.str("Next", false)
		st.End, _ = o.boolean("End")
		switch {
		case st.Next != "" && st.End:
			p.fail(CodeSchema, loc, "A state must not have both \"Next\" and \"End\"")
		case st.Next == "" && !st.End:
			p.fail(CodeSchema, loc, "A %s state must have \"Next\" or \"End\": true", typ)
		}
	}

	switch typ {
	case TypePass:
		st.Result, st.HasResult = o.m["Result"]
	case TypeTask:
		p.parseTask(o, st)
	case TypeChoice:
		p.parseChoice(o, st)
	case TypeWait:
		p.parseWait(o, st)
	case TypeFail:
		o.exclusive("Error", "ErrorPath")
		o.exclusive("Cause", "CausePath")
		st.Error, _ = o.str("Error", false)
		st.Cause, _ = o.str("Cause", false)
		st.ErrorPath = o.expr("ErrorPath")
		st.CausePath = o.expr("CausePath")
	case TypeParallel:
		p.parseParallel(o, st)
	case TypeMap:
		p.parseMap(o, st)
	}
	if has(fields, "Retry") {
		st.Retry = p.parseRetry(o)
		st.Catch = p.parseCatch(o)
	}
	return st
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *parser) parseTask(o *object, st *State) {
	st.Resource, _ = o.str("Resource", true)
	if strings.HasPrefix(st.Resource, "arn:") && strings.Contains(st.Resource, ":lambda:") && !strings.Contains(st.Resource, ":::") &&
		!lambdaARN.MatchString(st.Resource) {
		p.fail(CodeSchema, o.at("Resource"), "Value is not a valid resource ARN")
	}
	o.exclusive("TimeoutSeconds", "TimeoutSecondsPath")
	o.exclusive("HeartbeatSeconds", "HeartbeatSecondsPath")
	st.TimeoutSeconds, _ = o.integer("TimeoutSeconds", 1)
	st.TimeoutSecondsPath = o.path("TimeoutSecondsPath")
	st.HeartbeatSeconds, _ = o.integer("HeartbeatSeconds", 1)
	st.HeartbeatSecondsPath = o.path("HeartbeatSecondsPath")
	timeout := st.TimeoutSeconds
	if timeout == 0 {
		timeout = DefaultTaskTimeout
	}
	if st.HeartbeatSeconds > 0 && st.TimeoutSecondsPath == nil && st.HeartbeatSeconds >= timeout {
		p.fail(CodeSchema, o.at("HeartbeatSeconds"), "HeartbeatSeconds (%d) must be smaller than TimeoutSeconds (%d)", st.HeartbeatSeconds, timeout)
	}
}

func (p *parser) parseWait(o *object, st *State) {
	n := 0
	for _, f := range []string{"Seconds", "Timestamp", "SecondsPath", "TimestampPath"} {
		if o.has(f) {
			n++
		}
	}
	if n != 1 {
		p.fail(CodeSchema, o.loc, "A Wait state must have exactly one of \"Seconds\", \"Timestamp\", \"SecondsPath\", \"TimestampPath\"")
	}
	if s, ok := o.integer("Seconds", 0); ok {
		if s > MaxWaitSeconds {
			p.fail(CodeSchema, o.at("Seconds"), "Maximum value is %d", MaxWaitSeconds)
		}
		st.Seconds = &s
	}
	if ts, ok := o.str("Timestamp", false); ok {
		t, valid := ParseTimestamp(ts)
		if !valid {
			p.fail(CodeSchema, o.at("Timestamp"), "The Timestamp %q is not an RFC 3339 timestamp", ts)
		}
		st.Timestamp = &t
	}
	st.SecondsPath = o.path("SecondsPath")
	st.TimestampPath = o.path("TimestampPath")
}

func (p *parser) parseChoice(o *object, st *State) {
	st.Default, _ = o.str("Default", false)
	v, ok := o.m["Choices"]
	if !ok {
		p.fail(CodeSchema, o.loc, "The field \"Choices\" is required")
		return
	}
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		p.fail(CodeSchema, o.at("Choices"), "\"Choices\" must be a non-empty array")
		return
	}
	for i, r := range arr {
		if rule := p.parseRule(r, fmt.Sprintf("%s/Choices/%d", o.loc, i), true); rule != nil {
			st.Choices = append(st.Choices, rule)
		}
	}
}

func (p *parser) parseRule(v any, loc string, top bool) *ChoiceRule {
	o := p.object(v, loc, "A choice rule")
	if o == nil {
		return nil
	}
	r := &ChoiceRule{}
	var ops []string
	for _, k := range sortedKeys(o.m) {
		switch {
		case k == "Next" || k == "Comment" || k == "Variable":
		case k == "And" || k == "Or" || k == "Not":
			ops = append(ops, k)
		case isOperator(k):
			ops = append(ops, k)
		default:
			if why, known := unsupported[k]; known {
				p.fail(CodeSchema, o.at(k), "The field %q is not supported: %s", k, why)
			} else {
				p.fail(CodeSchema, o.at(k), "The field %q is not a choice rule operator", k)
			}
		}
	}
	next, hasNext := o.str("Next", false)
	switch {
	case top && !hasNext:
		p.fail(CodeSchema, loc, "A top-level choice rule must have \"Next\"")
	case !top && o.has("Next"):
		p.fail(CodeSchema, o.at("Next"), "A nested choice rule must not have \"Next\"")
	}
	r.Next = next
	if len(ops) != 1 {
		p.fail(CodeSchema, loc, "A choice rule must have exactly one operator, found %d (%s)", len(ops), strings.Join(ops, ", "))
		return nil
	}
	op := ops[0]
	switch op {
	case "And", "Or":
		if o.has("Variable") {
			p.fail(CodeSchema, o.at("Variable"), "A Boolean rule (%s) must not have \"Variable\"", op)
		}
		arr, ok := o.m[op].([]any)
		if !ok || len(arr) == 0 {
			p.fail(CodeSchema, o.at(op), "%q must be a non-empty array of rules", op)
			return nil
		}
		var subs []*ChoiceRule
		for i, s := range arr {
			if sub := p.parseRule(s, fmt.Sprintf("%s/%s/%d", loc, op, i), false); sub != nil {
				subs = append(subs, sub)
			}
		}
		if op == "And" {
			r.And = subs
		} else {
			r.Or = subs
		}
		return r
	case "Not":
		if o.has("Variable") {
			p.fail(CodeSchema, o.at("Variable"), "A Boolean rule (Not) must not have \"Variable\"")
		}
		r.Not = p.parseRule(o.m["Not"], loc+"/Not", false)
		if r.Not == nil {
			return nil
		}
		return r
	}
	r.Variable = o.path("Variable")
	if r.Variable == nil {
		if !o.has("Variable") {
			p.fail(CodeSchema, loc, "A comparison rule must have \"Variable\"")
		}
		return nil
	}
	r.Operator = op
	if strings.HasSuffix(op, "Path") && !typeTests[op] {
		r.Operand = o.path(op)
		if r.Operand == nil {
			return nil
		}
		return r
	}
	r.Value = o.m[op]
	if err := checkOperand(op, r.Value); err != nil {
		p.fail(CodeSchema, o.at(op), "%v", err)
		return nil
	}
	return r
}

func (p *parser) errorEquals(o *object) []string {
	v, ok := o.m["ErrorEquals"]
	if !ok {
		p.fail(CodeSchema, o.loc, "The field \"ErrorEquals\" is required")
		return nil
	}
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		p.fail(CodeSchema, o.at("ErrorEquals"), "\"ErrorEquals\" must be a non-empty array of strings")
		return nil
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			p.fail(CodeSchema, o.at("ErrorEquals"), "\"ErrorEquals\" must contain strings")
			continue
		}
		out = append(out, s)
	}
	if has(out, ErrAll) && len(out) > 1 {
		p.fail(CodeSchema, o.at("ErrorEquals"), "States.ALL must appear alone in \"ErrorEquals\"")
	}
	return out
}

// checkAllLast enforces that a States.ALL retrier or catcher comes last.
func (p *parser) checkAllLast(lists [][]string, loc, field string) {
	for i, l := range lists {
		if has(l, ErrAll) && i != len(lists)-1 {
			p.fail(CodeSchema, fmt.Sprintf("%s/%s/%d", loc, field, i), "A %s element with States.ALL must be the last one", field)
		}
	}
}

func (p *parser) array(o *object, field string) []any {
	v, ok := o.m[field]
	if !ok {
		return nil
	}
	arr, ok := v.([]any)
	if !ok {
		p.fail(CodeSchema, o.at(field), "%q must be an array", field)
		return nil
	}
	return arr
}

func (p *parser) parseRetry(o *object) []*Retrier {
	var out []*Retrier
	var lists [][]string
	for i, v := range p.array(o, "Retry") {
		ro := p.object(v, fmt.Sprintf("%s/Retry/%d", o.loc, i), "A retrier")
		if ro == nil {
			continue
		}
		ro.checkFields([]string{"ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate", "MaxDelaySeconds", "JitterStrategy", "Comment"})
		r := &Retrier{ErrorEquals: p.errorEquals(ro), IntervalSeconds: 1, MaxAttempts: 3, BackoffRate: 2}
		if n, ok := ro.integer("IntervalSeconds", 1); ok {
			r.IntervalSeconds = float64(n)
		}
		if n, ok := ro.integer("MaxAttempts", 0); ok {
			r.MaxAttempts = int(min(n, 99999999))
		}
		if f, ok := ro.number("BackoffRate", 1); ok {
			r.BackoffRate = f
		}
		if n, ok := ro.integer("MaxDelaySeconds", 1); ok {
			r.MaxDelaySeconds = float64(n)
		}
		if js, ok := ro.str("JitterStrategy", false); ok {
			switch js {
			case "FULL":
				r.JitterFull = true
			case "NONE":
			default:
				p.fail(CodeSchema, ro.at("JitterStrategy"), "JitterStrategy must be FULL or NONE, got %q", js)
			}
		}
		lists = append(lists, r.ErrorEquals)
		out = append(out, r)
	}
	p.checkAllLast(lists, o.loc, "Retry")
	return out
}

func (p *parser) parseCatch(o *object) []*Catcher {
	var out []*Catcher
	var lists [][]string
	for i, v := range p.array(o, "Catch") {
		co := p.object(v, fmt.Sprintf("%s/Catch/%d", o.loc, i), "A catcher")
		if co == nil {
			continue
		}
		co.checkFields([]string{"ErrorEquals", "Next", "ResultPath", "Comment"})
		c := &Catcher{ErrorEquals: p.errorEquals(co), ResultPath: co.resultPath("ResultPath")}
		c.Next, _ = co.str("Next", true)
		lists = append(lists, c.ErrorEquals)
		out = append(out, c)
	}
	p.checkAllLast(lists, o.loc, "Catch")
	return out
}

func (p *parser) parseParallel(o *object, st *State) {
	arr := p.array(o, "Branches")
	if len(arr) == 0 {
		p.fail(CodeSchema, o.loc, "A Parallel state must have a non-empty \"Branches\" array")
		return
	}
	for i, v := range arr {
		bo := p.object(v, fmt.Sprintf("%s/Branches/%d", o.loc, i), "A branch")
		if bo == nil {
			continue
		}
		bo.checkFields([]string{"StartAt", "States", "Comment"})
		st.Branches = append(st.Branches, p.parseMachine(bo))
	}
}

func (p *parser) parseMap(o *object, st *State) {
	o.exclusive("Iterator", "ItemProcessor")
	o.exclusive("ItemSelector", "Parameters")
	o.exclusive("MaxConcurrency", "MaxConcurrencyPath")
	field := "ItemProcessor"
	if o.has("Iterator") {
		field = "Iterator"
	}
	v, ok := o.m[field]
	if !ok {
		p.fail(CodeSchema, o.loc, "A Map state must have \"ItemProcessor\" (or the older \"Iterator\")")
		return
	}
	io := p.object(v, o.at(field), field)
	if io == nil {
		return
	}
	allowed := []string{"StartAt", "States", "Comment"}
	if field == "ItemProcessor" {
		allowed = append(allowed, "ProcessorConfig")
		if pc, ok := io.m["ProcessorConfig"]; ok {
			if pco := p.object(pc, io.at("ProcessorConfig"), "ProcessorConfig"); pco != nil {
				pco.checkFields([]string{"Mode", "ExecutionType"})
				if mode, ok := pco.str("Mode", false); ok && mode != "INLINE" {
					p.fail(CodeSchema, pco.at("Mode"), "Map Mode %q is not supported: only INLINE runs locally", mode)
				}
				if pco.has("ExecutionType") {
					p.fail(CodeSchema, pco.at("ExecutionType"), "The field \"ExecutionType\" is not supported: Distributed Map is not supported")
				}
			}
		}
	}
	io.checkFields(allowed)
	st.Iterator = p.parseMachine(io)
	st.ItemsPath = o.optionalPath("ItemsPath")
	if st.ItemsPath.Null {
		p.fail(CodeSchema, o.at("ItemsPath"), "ItemsPath must be a path, not null")
	}
	st.ItemSelector = o.template("ItemSelector")
	if st.ItemSelector == nil {
		// Parameters is the older name of ItemSelector in a Map state.
		st.ItemSelector, st.Parameters = st.Parameters, nil
	}
	st.MaxConcurrency, _ = o.integer("MaxConcurrency", 0)
	st.MaxConcurrencyPath = o.path("MaxConcurrencyPath")
}
