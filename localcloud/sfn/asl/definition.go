package asl

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// State types.
const (
	TypeTask     = "Task"
	TypePass     = "Pass"
	TypeChoice   = "Choice"
	TypeWait     = "Wait"
	TypeSucceed  = "Succeed"
	TypeFail     = "Fail"
	TypeParallel = "Parallel"
	TypeMap      = "Map"
)

// DefaultTaskTimeout is the TimeoutSeconds AWS gives a Task that sets none:
// 99,999,999 seconds, longer than the one-year limit of an execution, so in
// effect no timeout.
const DefaultTaskTimeout = 99999999

// Definition is a parsed, validated state machine.
type Definition struct {
	Comment string
	Machine
	// TimeoutSeconds limits the whole execution; 0 means no limit.
	TimeoutSeconds int64
}

// Machine is a set of states with a start: the top level of a definition,
// a Parallel branch or a Map iteration. Transitions never leave a Machine.
type Machine struct {
	StartAt string
	States  map[string]*State
}

// State is one parsed state. Which fields are set depends on Type.
type State struct {
	Name    string
	Type    string
	Comment string
	Next    string
	End     bool

	InputPath      OptionalPath
	OutputPath     OptionalPath
	Parameters     *Template
	ResultSelector *Template
	ResultPath     ResultPath

	// Pass
	Result    any
	HasResult bool

	// Task
	Resource             string
	TimeoutSeconds       int64 // 0: see TimeoutSecondsPath, else DefaultTaskTimeout
	TimeoutSecondsPath   *Path
	HeartbeatSeconds     int64 // 0: none, or see HeartbeatSecondsPath
	HeartbeatSecondsPath *Path
	Retry                []*Retrier
	Catch                []*Catcher

	// Choice
	Choices []*ChoiceRule
	Default string

	// Wait: exactly one of these is set.
	Seconds       *int64
	Timestamp     *time.Time
	SecondsPath   *Path
	TimestampPath *Path

	// Fail
	Error     string
	Cause     string
	ErrorPath *Expr
	CausePath *Expr

	// Parallel
	Branches []*Machine

	// Map (inline)
	Iterator           *Machine
	ItemsPath          OptionalPath
	ItemSelector       *Template
	MaxConcurrency     int64
	MaxConcurrencyPath *Path
}

// Retrier is one element of a Retry field.
type Retrier struct {
	ErrorEquals     []string
	IntervalSeconds float64
	MaxAttempts     int
	BackoffRate     float64
	MaxDelaySeconds float64 // 0: no cap
	JitterFull      bool
}

// Delay returns the wait before retry number attempt (0-based) of this
// retrier, before jitter: IntervalSeconds × BackoffRate^attempt, capped by
// MaxDelaySeconds.
func (r *Retrier) Delay(attempt int) time.Duration {
	d := r.IntervalSeconds
	for range attempt {
		d *= r.BackoffRate
		if r.MaxDelaySeconds > 0 && d >= r.MaxDelaySeconds {
			break
		}
	}
	if r.MaxDelaySeconds > 0 && d > r.MaxDelaySeconds {
		d = r.MaxDelaySeconds
	}
	return time.Duration(d * float64(time.Second))
}

// Catcher is one element of a Catch field.
type Catcher struct {
	ErrorEquals []string
	Next        string
	ResultPath  ResultPath
}

// OptionalPath is an InputPath, OutputPath or ItemsPath: absent means `$`,
// JSON null means an empty object.
type OptionalPath struct {
	Null bool
	Path *Path
}

// Apply selects the value the path names in the scope.
func (o OptionalPath) Apply(s *Scope, field string) (any, error) {
	switch {
	case o.Null:
		return map[string]any{}, nil
	case o.Path == nil:
		return s.Input, nil
	}
	v, ok := s.Get(o.Path)
	if !ok {
		return nil, Runtimef("Invalid path '%s' : No results for path %s in the %s of the state", o.Path, o.Path, strings.ToLower(field))
	}
	return v, nil
}

// ResultPath says where a state's result goes in its input: absent means
// `$` (the result replaces the input), JSON null discards the result.
type ResultPath struct {
	Discard bool
	Path    *Path
}

// Apply combines the state's input and result.
func (r ResultPath) Apply(input, result any) (any, error) {
	switch {
	case r.Discard:
		return input, nil
	case r.Path == nil:
		return result, nil
	}
	out, err := r.Path.Set(input, result)
	if err != nil {
		return nil, &Error{Name: ErrResultPathMatch, Cause: fmt.Sprintf("Unable to apply ResultPath %s to input %s: %v", r.Path, EncodeJSON(input), err)}
	}
	return out, nil
}

// Expr is a path or an intrinsic function (ErrorPath, CausePath).
type Expr struct {
	path *Path
	call *Call
}

// Eval evaluates the expression.
func (e *Expr) Eval(s *Scope) (any, error) {
	if e.call != nil {
		return e.call.Eval(s)
	}
	v, ok := s.Get(e.path)
	if !ok {
		return nil, Runtimef("Invalid path '%s': no results", e.path)
	}
	return v, nil
}

// Walk calls f for every state of the definition, nested ones included,
// with its location (e.g. "/States/P/Branches/0/States/X").
func (d *Definition) Walk(f func(st *State, loc string)) {
	walkMachine(&d.Machine, "", f)
}

func walkMachine(m *Machine, loc string, f func(*State, string)) {
	names := make([]string, 0, len(m.States))
	for n := range m.States {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st := m.States[n]
		at := loc + "/States/" + n
		f(st, at)
		for i, b := range st.Branches {
			walkMachine(b, fmt.Sprintf("%s/Branches/%d", at, i), f)
		}
		if st.Iterator != nil {
			walkMachine(st.Iterator, at+"/ItemProcessor", f)
		}
	}
}
