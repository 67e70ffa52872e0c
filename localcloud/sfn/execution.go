package sfn

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/clubdev/club/localcloud/sfn/asl"
	"github.com/clubdev/club/localcloud/sfn/clock"
)

// abortReason records why an execution was cut short.
type abortReason struct {
	status string // StatusAborted or StatusTimedOut
	err    string
	cause  string
}

// execution is one run of a state machine.
type execution struct {
	svc            *Service
	sm             *stateMachine // snapshot taken at start
	arn            string
	name           string
	input          string
	canonicalInput string
	inputValue     any
	start          time.Time
	scope          *cancelScope
	tags           atomic.Uint64
	done           chan struct{}

	mu     sync.Mutex
	events []HistoryEvent
	status string
	output string
	errStr string
	cause  string
	stop   time.Time
	reason *abortReason
}

func newExecution(s *Service, sm *stateMachine, arn, name, input, canonical string, value any) *execution {
	return &execution{
		svc: s, sm: sm, arn: arn, name: name, input: input, canonicalInput: canonical, inputValue: value,
		start: s.clk.Now(), scope: s.root.child(), done: make(chan struct{}), status: StatusRunning,
	}
}

// errAborted is returned through the interpreter when the execution (or a
// Parallel or Map state) is cut short; the reason is in execution.reason.
var errAborted = &asl.Error{Name: "States.Aborted"}

// nextTag returns a number unique within the execution, to tie wake
// messages to the wait they answer.
func (x *execution) nextTag() uint64 { return x.tags.Add(1) }

func (x *execution) run() {
	defer x.svc.wg.Done()
	defer x.svc.act.Release()
	r := x.newRunner(x.scope, nil)
	r.root = true
	defer r.close()
	r.emit(EventExecutionStarted, EventDetails{Input: asl.EncodeJSON(x.inputValue), RoleArn: x.sm.roleArn})
	var timer clock.Timer
	if t := x.sm.def.TimeoutSeconds; t > 0 {
		timer = x.svc.clk.AfterFunc(time.Duration(t)*time.Second, func() {
			x.abort(abortReason{status: StatusTimedOut, err: asl.ErrTimeout, cause: "The execution exceeded the state machine's TimeoutSeconds"})
		})
	}
	out, ferr := r.runMachine(&x.sm.def.Machine, x.inputValue)
	if timer != nil {
		timer.Stop()
	}
	x.finish(r, out, ferr)
}

func (x *execution) finish(r *runner, out any, ferr *asl.Error) {
	x.mu.Lock()
	reason := x.reason
	x.mu.Unlock()
	status := StatusSucceeded
	var d EventDetails
	typ := EventExecutionSucceeded
	switch {
	case ferr == errAborted && reason != nil:
		status, d.Error, d.Cause = reason.status, reason.err, reason.cause
		typ = EventExecutionAborted
		if status == StatusTimedOut {
			typ = EventExecutionTimedOut
		}
	case ferr != nil:
		status, d.Error, d.Cause = StatusFailed, ferr.Name, ferr.Cause
		typ = EventExecutionFailed
	default:
		d.Output = asl.EncodeJSON(out)
	}
	r.emit(typ, d)
	x.mu.Lock()
	x.status, x.output, x.errStr, x.cause = status, d.Output, d.Error, d.Cause
	x.stop = x.svc.clk.Now()
	fin := FinishRecord{Status: x.status, Output: x.output, Error: x.errStr, Cause: x.cause, StopDate: x.stop}
	x.mu.Unlock()
	x.svc.record(JournalEntry{Kind: EntryFinish, Execution: x.arn, Finish: &fin})
	x.scope.release()
	close(x.done)
}

// abort cuts the execution short. The first reason wins.
func (x *execution) abort(reason abortReason) {
	x.mu.Lock()
	if x.reason != nil || x.status != StatusRunning {
		x.mu.Unlock()
		return
	}
	x.reason = &reason
	x.mu.Unlock()
	x.scope.abort()
}

// appendEvent adds an event to the history and returns its id.
func (x *execution) appendEvent(typ string, prev int64, d EventDetails) int64 {
	now := x.svc.clk.Now()
	x.mu.Lock()
	defer x.mu.Unlock()
	id := int64(len(x.events)) + 1
	if x.svc.suspended.Load() {
		return id // suspended: the history stays as the journal has it
	}
	x.events = append(x.events, HistoryEvent{ID: id, PreviousEventID: prev, Timestamp: now, Type: typ, Details: d})
	x.svc.record(JournalEntry{Kind: EntryEvent, Execution: x.arn, Event: &EventRecord{
		ID: id, Previous: prev, Timestamp: now, Type: typ, Details: d,
	}})
	return id
}

func (x *execution) history() []HistoryEvent {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]HistoryEvent(nil), x.events...)
}

func (x *execution) describe() Execution {
	x.mu.Lock()
	defer x.mu.Unlock()
	return Execution{
		ARN: x.arn, StateMachineArn: x.sm.arn, Name: x.name, Status: x.status,
		StartDate: x.start, StopDate: x.stop, Input: x.input, Output: x.output, Error: x.errStr, Cause: x.cause,
	}
}
