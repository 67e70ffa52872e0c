package fault

import (
	"errors"
	"fmt"
	"time"
)

// Action is what a fault does.
type Action string

// The actions. None is only ever a Decision, never a Rule's action.
const (
	None  Action = "none"
	Crash Action = "crash"
	Fail  Action = "error"
	Delay Action = "delay"
)

// MaxDelay bounds a delay rule: longer than any function timeout, short
// enough that a mistaken plan cannot hang a suite.
const MaxDelay = 5 * time.Minute

// Rule arms one fault.
type Rule struct {
	// Point is where the rule applies (one of Points).
	Point Point `json:"point"`
	// Function, if set, limits the rule to the function of that name
	// (AWS_LAMBDA_FUNCTION_NAME, as in the stack outputs); empty means every
	// function that passes the point.
	Function string `json:"function,omitempty"`
	Action   Action `json:"action"`
	// Probability is the chance, in (0, 1], that the rule fires at a pass;
	// 0 (absent) means 1.
	Probability float64 `json:"probability,omitempty"`
	// Times is how often the rule fires at most; 0 means no limit, 1 is
	// "once".
	Times int `json:"times,omitempty"`
	// DelayMS is the delay of a delay rule, in milliseconds.
	DelayMS int `json:"delay_ms,omitempty"`
}

func (r Rule) validate() error {
	var errs []error
	if !Known(r.Point) {
		errs = append(errs, fmt.Errorf("unknown point %q (known: %v)", r.Point, Points))
	}
	switch r.Action {
	case Crash, Fail:
		if r.DelayMS != 0 {
			errs = append(errs, fmt.Errorf("delay_ms applies only to the %s action", Delay))
		}
	case Delay:
		if r.DelayMS <= 0 || time.Duration(r.DelayMS)*time.Millisecond > MaxDelay {
			errs = append(errs, fmt.Errorf("delay_ms must be in 1..%d", MaxDelay.Milliseconds()))
		}
	default:
		errs = append(errs, fmt.Errorf("action %q is not one of %s, %s, %s", r.Action, Crash, Fail, Delay))
	}
	if r.Probability < 0 || r.Probability > 1 {
		errs = append(errs, fmt.Errorf("probability %v is outside (0, 1]", r.Probability))
	}
	if r.Times < 0 {
		errs = append(errs, fmt.Errorf("times %d is negative", r.Times))
	}
	return errors.Join(errs...)
}

func (r Rule) probability() float64 {
	if r.Probability == 0 {
		return 1
	}
	return r.Probability
}

// Plan is the set of armed faults.
type Plan struct {
	// Seed makes the probabilistic decisions reproducible (see the package
	// documentation).
	Seed uint64 `json:"seed"`
	// Rules are tried in order at each pass; the first that fires decides.
	Rules []Rule `json:"rules"`
}

// Validate reports every invalid rule.
func (p Plan) Validate() error {
	var errs []error
	for i, r := range p.Rules {
		if err := r.validate(); err != nil {
			errs = append(errs, fmt.Errorf("rule %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// Hit is what a program reports when it passes a point.
type Hit struct {
	Point    Point  `json:"point"`
	Function string `json:"function"`
	// Key identifies the unit of work at the point (an idempotency key, an
	// event id): decisions are reproducible per key.
	Key string `json:"key"`
}

// Decision is what the program must do at a pass.
type Decision struct {
	Action  Action `json:"action"`
	DelayMS int    `json:"delay_ms,omitempty"`
	// Rule is the index of the rule that fired, -1 when none did.
	Rule int `json:"rule"`
}

// Fired records one fault that fired.
type Fired struct {
	Rule     int    `json:"rule"`
	Point    Point  `json:"point"`
	Function string `json:"function"`
	Key      string `json:"key"`
	Action   Action `json:"action"`
	// Occurrence counts the passes of this key at this point in this
	// function before this one.
	Occurrence int       `json:"occurrence"`
	At         time.Time `json:"at"`
}

// RuleState is an armed rule with its counts.
type RuleState struct {
	Rule
	// Tried counts the passes at which the rule was tried (it matched the
	// point and function, and no earlier rule fired); Fired how often it
	// fired.
	Tried int64 `json:"tried"`
	Fired int64 `json:"fired"`
}

// State is a snapshot of a Registry.
type State struct {
	Seed  uint64      `json:"seed"`
	Rules []RuleState `json:"rules"`
	// Passes counts, per point and function, every pass reported since the
	// plan was armed (or the registry disarmed), whether or not a rule
	// fired: how often each function did the work at that point.
	Passes map[Point]map[string]int64 `json:"passes"`
	// Fired lists the faults that fired, oldest first, at most
	// MaxFiredRecords; FiredDropped counts the ones left out.
	Fired        []Fired `json:"fired"`
	FiredDropped int64   `json:"fired_dropped"`
}

// PassCount is how often fn passed p; fn "" counts every function.
func (s State) PassCount(p Point, fn string) int64 {
	if fn != "" {
		return s.Passes[p][fn]
	}
	var n int64
	for _, c := range s.Passes[p] {
		n += c
	}
	return n
}

// FiredCount is how many faults of action a (every action if a is "") fired
// at p, in the listed records.
func (s State) FiredCount(p Point, a Action) int {
	n := 0
	for _, f := range s.Fired {
		if f.Point == p && (a == "" || f.Action == a) {
			n++
		}
	}
	return n
}
