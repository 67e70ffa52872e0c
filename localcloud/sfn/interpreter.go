package sfn

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/clubdev/club/localcloud/sfn/asl"
)

// runner interprets states on one goroutine: the execution's own, a
// Parallel branch's or a Map iteration's. It records history events chained
// by PreviousEventID along its own line of events.
type runner struct {
	x      *execution
	scope  *cancelScope
	w      *waiter
	lastID int64
	item   *mapItem // set inside a Map iteration, for $$.Map.Item
	root   bool     // the execution's own top-level run: it records resume points
}

type mapItem struct {
	index int
	value any
}

func (x *execution) newRunner(scope *cancelScope, parent *runner) *runner {
	r := &runner{x: x, scope: scope, w: newWaiter(x.svc.act)}
	if parent != nil {
		r.lastID = parent.lastID
		r.item = parent.item
	}
	scope.add(r.w)
	return r
}

func (r *runner) close() { r.scope.remove(r.w) }

func (r *runner) emit(typ string, d EventDetails) { r.lastID = r.x.appendEvent(typ, r.lastID, d) }

// wait returns the next message, or aborted once the runner's scope has
// been cut short.
func (r *runner) wait() (m wake, aborted bool) {
	if r.scope.aborted() {
		return wake{}, true
	}
	m = r.w.next()
	return m, r.scope.aborted()
}

// sleep blocks for d of clock time.
func (r *runner) sleep(d time.Duration) *asl.Error {
	if r.scope.aborted() {
		return errAborted
	}
	if d <= 0 {
		return nil
	}
	tag := r.x.nextTag()
	t := r.x.svc.clk.AfterFunc(d, func() { r.w.post(wake{kind: wakeTimer, tag: tag}) })
	defer t.Stop()
	for {
		m, aborted := r.wait()
		if aborted {
			return errAborted
		}
		if m.kind == wakeTimer && m.tag == tag {
			return nil
		}
	}
}

// runMachine runs states from StartAt until one ends the machine.
func (r *runner) runMachine(m *asl.Machine, input any) (any, *asl.Error) {
	return r.runMachineFrom(m, m.StartAt, input, nil)
}

// runMachineFrom runs states from the named one, resuming it from p when p
// is set (persist.go), until one ends the machine.
func (r *runner) runMachineFrom(m *asl.Machine, name string, input any, p *ResumePoint) (any, *asl.Error) {
	for {
		st := m.States[name]
		out, next, err := r.runState(st, input, p)
		p = nil
		if err != nil {
			return nil, err
		}
		if next == "" {
			return out, nil
		}
		name, input = next, out
	}
}

// stateRun is the evaluation context of one state: it builds the context
// object ($$) on demand.
type stateRun struct {
	r       *runner
	st      *asl.State
	entered time.Time
	retries int
	token   string
	item    *mapItem
	failed  *failedEvent // of the last attempt of a Parallel or Map state
	// resume is the point a restored execution resumes this state from;
	// the first attempt takes it (takeResume).
	resume *ResumePoint
}

// takeResume returns the resume point once, for the state's first attempt.
func (c *stateRun) takeResume() *ResumePoint {
	p := c.resume
	c.resume = nil
	return p
}

func (c *stateRun) contextObject() any {
	x := c.r.x
	state := map[string]any{"EnteredTime": formatTime(c.entered), "Name": c.st.Name}
	switch c.st.Type {
	case asl.TypeTask, asl.TypeParallel, asl.TypeMap:
		// Only the states that can retry carry a RetryCount: AWS's
		// recorded context object of a Pass state has none.
		state["RetryCount"] = asl.Int(int64(c.retries))
	}
	ctx := map[string]any{
		"Execution": map[string]any{
			"Id": x.arn, "Input": x.inputValue, "Name": x.name, "RoleArn": x.sm.roleArn,
			"StartTime": formatTime(x.start), "RedriveCount": asl.Int(0),
		},
		"State":        state,
		"StateMachine": map[string]any{"Id": x.sm.arn, "Name": x.sm.name},
	}
	if c.token != "" {
		ctx["Task"] = map[string]any{"Token": c.token}
	}
	if item := c.item; item != nil {
		ctx["Map"] = map[string]any{"Item": map[string]any{"Index": asl.Int(int64(item.index)), "Value": item.value}}
	}
	return ctx
}

func (c *stateRun) scope(input any) *asl.Scope {
	return &asl.Scope{Input: input, Context: c.contextObject}
}

// effectiveInput applies InputPath and Parameters.
func (c *stateRun) effectiveInput(input any) (any, *asl.Error) {
	v, err := c.st.InputPath.Apply(c.scope(input), "InputPath")
	if err != nil {
		return nil, toASLError(err)
	}
	if c.st.Parameters != nil {
		if v, err = c.st.Parameters.Eval(c.scope(v)); err != nil {
			return nil, toASLError(err)
		}
	}
	return v, nil
}

// output applies ResultSelector, ResultPath and OutputPath to a result.
func (c *stateRun) output(raw, result any) (any, *asl.Error) {
	var err error
	if c.st.ResultSelector != nil {
		if result, err = c.st.ResultSelector.Eval(c.scope(result)); err != nil {
			return nil, toASLError(err)
		}
	}
	combined, err := c.st.ResultPath.Apply(raw, result)
	if err != nil {
		return nil, toASLError(err)
	}
	out, err := c.st.OutputPath.Apply(c.scope(combined), "OutputPath")
	if err != nil {
		return nil, toASLError(err)
	}
	return out, nil
}

func toASLError(err error) *asl.Error {
	var e *asl.Error
	if errors.As(err, &e) {
		return e
	}
	return asl.Runtimef("%v", err)
}

// runState runs one state and returns its output and the next state's name
// ("" when the machine ends).
func (r *runner) runState(st *asl.State, input any, resume *ResumePoint) (any, string, *asl.Error) {
	if r.scope.aborted() {
		return nil, "", errAborted
	}
	c := &stateRun{r: r, st: st, entered: r.x.svc.clk.Now(), item: r.item, resume: resume}
	if resume != nil {
		// Entered before the stop: its event is in the history already.
		c.entered = resume.Entered
	} else {
		r.emit(stateEvent(st.Type, "Entered"), EventDetails{Name: st.Name, Input: asl.EncodeJSON(input)})
		r.point(ResumePoint{State: st.Name, Input: asl.EncodeJSON(input), Entered: c.entered})
	}
	var (
		out  any
		next = st.Next
		err  *asl.Error
	)
	switch st.Type {
	case asl.TypePass:
		out, err = r.pass(c, input)
	case asl.TypeTask:
		out, next, err = r.withRetry(c, input, r.task)
	case asl.TypeChoice:
		out, next, err = r.choice(c, input)
	case asl.TypeWait:
		out, err = r.waitState(c, input)
	case asl.TypeSucceed:
		out, err = r.succeed(c, input)
	case asl.TypeFail:
		return nil, "", r.fail(c, input)
	case asl.TypeParallel:
		out, next, err = r.withRetry(c, input, r.parallel)
	case asl.TypeMap:
		out, next, err = r.withRetry(c, input, r.mapState)
	default:
		err = asl.Runtimef("unknown state type %s", st.Type)
	}
	if err != nil {
		if err == errAborted {
			switch st.Type {
			case asl.TypeTask, asl.TypeWait, asl.TypeParallel, asl.TypeMap:
				r.emit(stateEvent(st.Type, "Aborted"), EventDetails{Name: st.Name})
			}
		}
		return nil, "", err
	}
	r.emit(stateEvent(st.Type, "Exited"), EventDetails{Name: st.Name, Output: asl.EncodeJSON(out)})
	return out, next, nil
}

func (r *runner) pass(c *stateRun, input any) (any, *asl.Error) {
	eff, err := c.effectiveInput(input)
	if err != nil {
		return nil, err
	}
	result := eff
	if c.st.HasResult {
		result = c.st.Result
	}
	return c.output(input, result)
}

func (r *runner) succeed(c *stateRun, input any) (any, *asl.Error) {
	eff, err := c.st.InputPath.Apply(c.scope(input), "InputPath")
	if err != nil {
		return nil, toASLError(err)
	}
	out, err := c.st.OutputPath.Apply(c.scope(eff), "OutputPath")
	if err != nil {
		return nil, toASLError(err)
	}
	return out, nil
}

func (r *runner) fail(c *stateRun, input any) *asl.Error {
	st := c.st
	e := &asl.Error{Name: st.Error, Cause: st.Cause}
	for _, f := range []struct {
		expr *asl.Expr
		dst  *string
		name string
	}{{st.ErrorPath, &e.Name, "ErrorPath"}, {st.CausePath, &e.Cause, "CausePath"}} {
		if f.expr == nil {
			continue
		}
		v, err := f.expr.Eval(c.scope(input))
		if err != nil {
			return toASLError(err)
		}
		s, ok := v.(string)
		if !ok {
			return asl.Runtimef("The %s of the Fail state %q must resolve to a string, got %s", f.name, st.Name, asl.EncodeJSON(v))
		}
		*f.dst = s
	}
	return e
}

func (r *runner) choice(c *stateRun, input any) (any, string, *asl.Error) {
	eff, err := c.st.InputPath.Apply(c.scope(input), "InputPath")
	if err != nil {
		return nil, "", toASLError(err)
	}
	next := ""
	for _, rule := range c.st.Choices {
		ok, err := rule.Eval(c.scope(eff))
		if err != nil {
			return nil, "", toASLError(err)
		}
		if ok {
			next = rule.Next
			break
		}
	}
	if next == "" {
		if c.st.Default == "" {
			return nil, "", &asl.Error{Name: asl.ErrNoChoiceMatched, Cause: fmt.Sprintf("No Choice Rule matched and there is no Default in the state %q", c.st.Name)}
		}
		next = c.st.Default
	}
	out, err := c.st.OutputPath.Apply(c.scope(eff), "OutputPath")
	if err != nil {
		return nil, "", toASLError(err)
	}
	return out, next, nil
}

func (r *runner) waitState(c *stateRun, input any) (any, *asl.Error) {
	st := c.st
	eff, err := st.InputPath.Apply(c.scope(input), "InputPath")
	if err != nil {
		return nil, toASLError(err)
	}
	now := r.x.svc.clk.Now()
	var until time.Time
	switch {
	case st.Seconds != nil:
		until = now.Add(time.Duration(*st.Seconds) * time.Second)
	case st.Timestamp != nil:
		until = *st.Timestamp
	case st.SecondsPath != nil:
		v, ok := c.scope(eff).Get(st.SecondsPath)
		n, isInt := asl.ToInt(v)
		if !ok || !isInt || n < 0 {
			return nil, asl.Runtimef("The SecondsPath parameter does not reference a valid non-negative integer: %s", st.SecondsPath)
		}
		until = now.Add(time.Duration(n) * time.Second)
	case st.TimestampPath != nil:
		v, ok := c.scope(eff).Get(st.TimestampPath)
		s, isStr := v.(string)
		t, valid := asl.ParseTimestamp(s)
		if !ok || !isStr || !valid {
			return nil, asl.Runtimef("The TimestampPath parameter does not reference a valid ISO-8601 timestamp: %s", st.TimestampPath)
		}
		until = t
	}
	if p := c.takeResume(); p != nil && !p.Until.IsZero() {
		until = p.Until // the end it had before the stop
	} else {
		r.point(ResumePoint{State: st.Name, Input: asl.EncodeJSON(input), Entered: c.entered, Until: until})
	}
	if e := r.sleep(until.Sub(now)); e != nil {
		return nil, e
	}
	out, err := st.OutputPath.Apply(c.scope(eff), "OutputPath")
	if err != nil {
		return nil, toASLError(err)
	}
	return out, nil
}

// attemptFunc runs one attempt of a Task, Parallel or Map state and returns
// its result before output processing.
type attemptFunc func(c *stateRun, input any) (any, *asl.Error)

// withRetry runs attempts under the state's Retry policy, then its Catch,
// and finally processes the output.
func (r *runner) withRetry(c *stateRun, input any, attempt attemptFunc) (any, string, *asl.Error) {
	st := c.st
	counts := make([]int, len(st.Retry))
	for {
		result, err := attempt(c, input)
		if err == nil {
			out, perr := c.output(input, result)
			if perr == nil {
				return out, st.Next, nil
			}
			// A failure to process a successful result is not retried (that
			// would repeat the task's effect), but it can be caught.
			return r.catch(st, input, perr)
		}
		if err == errAborted || asl.Terminal(err.Name) {
			r.recordFailure(c)
			return nil, "", err
		}
		if i := matchRetrier(st.Retry, err); i >= 0 && counts[i] < st.Retry[i].MaxAttempts {
			c.failed = nil // a retried attempt has no failed event
			rt := st.Retry[i]
			d := rt.Delay(counts[i])
			if rt.JitterFull {
				d = time.Duration(rand.Int64N(int64(d) + 1))
			}
			counts[i]++
			c.retries++
			if e := r.sleep(d); e != nil {
				return nil, "", e
			}
			continue
		}
		r.recordFailure(c)
		return r.catch(st, input, err)
	}
}

// matchRetrier returns the first retrier whose ErrorEquals matches, even if
// it is exhausted: retriers after it are not consulted (ASL spec).
func matchRetrier(retriers []*asl.Retrier, err *asl.Error) int {
	for i, rt := range retriers {
		if err.MatchedBy(rt.ErrorEquals) {
			return i
		}
	}
	return -1
}

func (r *runner) catch(st *asl.State, input any, err *asl.Error) (any, string, *asl.Error) {
	if asl.Terminal(err.Name) {
		return nil, "", err
	}
	for _, cat := range st.Catch {
		if !err.MatchedBy(cat.ErrorEquals) {
			continue
		}
		errOut := map[string]any{"Error": err.Name}
		if err.Cause != "" {
			errOut["Cause"] = err.Cause
		}
		out, perr := cat.ResultPath.Apply(input, errOut)
		if perr != nil {
			return nil, "", toASLError(perr)
		}
		return out, cat.Next, nil
	}
	return nil, "", err
}
