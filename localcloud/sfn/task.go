package sfn

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/clubdev/club/localcloud/sfn/asl"
	"github.com/clubdev/club/localcloud/sfn/clock"
)

// taskEvents names the history events of a task: Task* for service
// integrations, LambdaFunction* for a bare Lambda function ARN.
type taskEvents struct {
	lambda       bool
	resourceType string
	resource     string
}

func newTaskEvents(resource string) taskEvents {
	if isLambdaARN(resource) {
		return taskEvents{lambda: true, resource: resource}
	}
	typ, name := resourceParts(resource)
	return taskEvents{resourceType: typ, resource: name}
}

func (e taskEvents) base() EventDetails {
	if e.lambda {
		return EventDetails{}
	}
	return EventDetails{ResourceType: e.resourceType, Resource: e.resource}
}

func (e taskEvents) typ(task, lambda string) string {
	if e.lambda {
		return lambda
	}
	return task
}

// task runs one attempt of a Task state: it calls the resource's handler,
// waits for its result (and for .waitForTaskToken, for the callback), and
// enforces TimeoutSeconds and HeartbeatSeconds.
func (r *runner) task(c *stateRun, input any) (any, *asl.Error) {
	st := c.st
	svc := r.x.svc
	callback := strings.HasSuffix(st.Resource, CallbackSuffix)
	// A callback task resumed after a restart waits for the token it had,
	// until the deadline it had, without invoking anything again.
	var resumed *ResumePoint
	if p := c.takeResume(); callback && p != nil && p.Token != "" {
		resumed = p
	}
	c.token = ""
	if callback {
		c.token = newToken()
	}
	if resumed != nil {
		c.token = resumed.Token
	}
	filtered, ferr := st.InputPath.Apply(c.scope(input), "InputPath")
	if ferr != nil {
		return nil, toASLError(ferr)
	}
	timeout, heartbeat, err := r.taskTimeouts(c, filtered)
	if err != nil {
		return nil, err
	}
	if resumed != nil && !resumed.Deadline.IsZero() {
		timeout = max(resumed.Deadline.Sub(svc.clk.Now()), time.Nanosecond)
	}
	eff := filtered
	if st.Parameters != nil {
		v, perr := st.Parameters.Eval(c.scope(filtered))
		if perr != nil {
			return nil, toASLError(perr)
		}
		eff = v
	}
	payload := asl.EncodeJSON(eff)

	ev := newTaskEvents(st.Resource)
	sched := ev.base()
	if ev.lambda {
		sched.Resource, sched.Input = st.Resource, payload
	} else {
		sched.Region, sched.Parameters = svc.region, payload
	}
	if st.TimeoutSeconds > 0 || st.TimeoutSecondsPath != nil {
		secs := int64(timeout / time.Second)
		sched.TimeoutInSeconds = &secs
	}
	if heartbeat > 0 && !ev.lambda {
		secs := int64(heartbeat / time.Second)
		sched.HeartbeatInSeconds = &secs
	}
	if resumed == nil {
		r.emit(ev.typ(EventTaskScheduled, EventLambdaScheduled), sched)
	}

	h, ok := svc.res.Lookup(st.Resource)
	if !ok {
		return nil, asl.Runtimef("The resource %q has no handler", st.Resource)
	}
	if resumed == nil {
		r.emit(ev.typ(EventTaskStarted, EventLambdaStarted), ev.base())
	}

	tag := r.x.nextTag()
	if resumed != nil && resumed.tag != 0 {
		tag = resumed.tag // registered by Restore
	}
	tctx, cancel := context.WithCancel(context.WithValue(r.scope.ctx, activityKey{}, svc.act))
	defer cancel()
	if callback {
		if resumed == nil || resumed.tag == 0 {
			svc.tokens.register(c.token, r.w, tag)
		}
		if resumed == nil {
			p := ResumePoint{State: st.Name, Input: asl.EncodeJSON(input), Entered: c.entered, Token: c.token}
			if timeout > 0 {
				p.Deadline = svc.clk.Now().Add(timeout)
			}
			r.point(p)
		}
		// Whatever ends this attempt, later callbacks get TaskTimedOut.
		defer svc.tokens.close(c.token)
	}
	req := TaskRequest{Resource: st.Resource, Input: json.RawMessage(payload), TaskToken: c.token,
		Execution: r.x.arn, State: st.Name, RetryCount: c.retries}
	if resumed == nil {
		svc.act.Hold()
		go func() {
			defer svc.act.Release()
			out, err := h.RunTask(tctx, req)
			r.w.post(wake{kind: wakeTaskResult, tag: tag, output: out, err: err})
		}()
	}

	var timeoutTimer, hbTimer clock.Timer
	if timeout > 0 {
		timeoutTimer = svc.clk.AfterFunc(timeout, func() { r.w.post(wake{kind: wakeTimer, tag: tag}) })
		defer timeoutTimer.Stop()
	}
	armHeartbeat := func() {
		if hbTimer != nil {
			hbTimer.Stop()
		}
		hbTimer = svc.clk.AfterFunc(heartbeat, func() { r.w.post(wake{kind: wakeHeartbeatTimer, tag: tag}) })
	}
	if callback && heartbeat > 0 {
		armHeartbeat()
		defer func() { hbTimer.Stop() }()
	}

	failed := func(e *asl.Error) (any, *asl.Error) {
		d := ev.base()
		d.Error, d.Cause = e.Name, e.Cause
		r.emit(ev.typ(EventTaskFailed, EventLambdaFailed), d)
		return nil, e
	}
	succeeded := func(out json.RawMessage) (any, *asl.Error) {
		v, err := decodeOutput(out)
		if err != nil {
			return failed(err)
		}
		d := ev.base()
		d.Output = asl.EncodeJSON(v)
		r.emit(ev.typ(EventTaskSucceeded, EventLambdaSucceeded), d)
		return v, nil
	}
	for {
		m, aborted := r.wait()
		if aborted {
			return nil, errAborted
		}
		if m.tag != tag {
			continue
		}
		switch m.kind {
		case wakeTaskResult:
			if m.err != nil {
				if callback && !svc.tokens.close(c.token) {
					continue // a callback already settled the task
				}
				return failed(taskError(m.err))
			}
			if !callback {
				return succeeded(m.output)
			}
			v, err := decodeOutput(m.output)
			if err != nil {
				if svc.tokens.close(c.token) {
					return failed(err)
				}
				continue
			}
			d := ev.base()
			d.Output = asl.EncodeJSON(v)
			r.emit(EventTaskSubmitted, d)
		case wakeCallbackSuccess:
			return succeeded(m.output)
		case wakeCallbackFailure:
			return failed(taskError(m.err))
		case wakeHeartbeat:
			if heartbeat > 0 {
				armHeartbeat()
			}
		case wakeTimer, wakeHeartbeatTimer:
			if callback && !svc.tokens.close(c.token) {
				continue // the callback won the race; its message is queued
			}
			// AWS reports a missed heartbeat as States.Timeout, like the
			// task's own timeout; only ErrorEquals tells them apart.
			e := &asl.Error{Name: asl.ErrTimeout}
			if m.kind == wakeHeartbeatTimer {
				e = asl.HeartbeatTimeout()
			}
			d := ev.base()
			d.Error = e.Name
			r.emit(ev.typ(EventTaskTimedOut, EventLambdaTimedOut), d)
			return nil, e
		}
	}
}

// taskTimeouts resolves TimeoutSeconds(Path) and HeartbeatSeconds(Path).
// Without TimeoutSeconds the task has no timer: AWS's default of 99,999,999
// seconds outlasts the longest execution anyway, and leaving it unarmed
// keeps a virtual clock from jumping years ahead to reach it.
func (r *runner) taskTimeouts(c *stateRun, input any) (timeout, heartbeat time.Duration, err *asl.Error) {
	st := c.st
	resolve := func(p *asl.Path, field string) (int64, *asl.Error) {
		v, ok := c.scope(input).Get(p)
		n, isInt := asl.ToInt(v)
		if !ok || !isInt || n <= 0 {
			return 0, asl.Runtimef("The %s %s does not reference a positive integer", field, p)
		}
		return n, nil
	}
	secs := st.TimeoutSeconds
	if st.TimeoutSecondsPath != nil {
		if secs, err = resolve(st.TimeoutSecondsPath, "TimeoutSecondsPath"); err != nil {
			return 0, 0, err
		}
	}
	hb := st.HeartbeatSeconds
	if st.HeartbeatSecondsPath != nil {
		if hb, err = resolve(st.HeartbeatSecondsPath, "HeartbeatSecondsPath"); err != nil {
			return 0, 0, err
		}
	}
	if secs > 0 && hb >= secs {
		return 0, 0, asl.Runtimef("HeartbeatSeconds (%d) must be smaller than TimeoutSeconds (%d)", hb, secs)
	}
	return time.Duration(secs) * time.Second, time.Duration(hb) * time.Second, nil
}

// taskError names a handler's error: a *TaskError keeps its name, anything
// else is States.TaskFailed.
func taskError(err error) *asl.Error {
	var te *TaskError
	if errors.As(err, &te) {
		return &asl.Error{Name: te.Name, Cause: te.Cause}
	}
	return &asl.Error{Name: asl.ErrTaskFailed, Cause: err.Error()}
}

func decodeOutput(out json.RawMessage) (any, *asl.Error) {
	if len(out) == 0 {
		return nil, nil
	}
	v, err := asl.DecodeJSON(out)
	if err != nil {
		return nil, asl.Runtimef("The task returned invalid JSON: %v", err)
	}
	return v, nil
}
