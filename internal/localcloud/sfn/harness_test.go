package sfn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/localcloud/sfn"
	"github.com/clubdev/club/internal/localcloud/sfn/clock"
)

// epoch is where virtual time starts in every test.
var epoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// env is the setup bundle: a service on a virtual clock that skips idle
// time, and its resource registry.
type env struct {
	t        *testing.T
	clock    *clock.Virtual
	res      *sfn.Resources
	svc      *sfn.Service
	machines int
}

func setup(t *testing.T) *env {
	t.Helper()
	clk := clock.NewVirtual(epoch)
	res := sfn.NewResources()
	svc := sfn.New(sfn.Options{Clock: clk, Resources: res})
	stop := clk.AutoAdvance()
	t.Cleanup(func() {
		svc.Close()
		stop()
	})
	return &env{t: t, clock: clk, res: res, svc: svc}
}

// manual is setup without auto-advance: time moves only with Advance.
func manual(t *testing.T) *env {
	t.Helper()
	clk := clock.NewVirtual(epoch)
	res := sfn.NewResources()
	svc := sfn.New(sfn.Options{Clock: clk, Resources: res})
	t.Cleanup(svc.Close)
	return &env{t: t, clock: clk, res: res, svc: svc}
}

// advance waits until every execution is blocked, then moves time by d.
func (e *env) advance(d time.Duration) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(e.t, e.clock.WaitIdle(ctx))
	e.clock.Advance(d)
}

func (e *env) create(name, definition string) string {
	e.t.Helper()
	sm, err := e.svc.CreateStateMachine(context.Background(), sfn.CreateStateMachineInput{
		Name: name, Definition: definition, RoleArn: "arn:aws:iam::000000000000:role/sfn"})
	require.NoError(e.t, err)
	return sm.ARN
}

func (e *env) start(machine, input string) string {
	e.t.Helper()
	x, err := e.svc.StartExecution(context.Background(), sfn.StartExecutionInput{StateMachineArn: machine, Input: input})
	require.NoError(e.t, err)
	return x.ARN
}

func (e *env) wait(arn string) sfn.Execution {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	x, err := e.svc.WaitForCompletion(ctx, arn)
	require.NoError(e.t, err)
	return x
}

// run creates a machine, runs it on input and waits for the end.
func (e *env) run(definition, input string) sfn.Execution {
	e.t.Helper()
	e.machines++
	return e.wait(e.start(e.create(fmt.Sprintf("machine-%d", e.machines), definition), input))
}

func (e *env) eventTypes(arn string) []string {
	e.t.Helper()
	h, err := e.svc.GetExecutionHistory(context.Background(), arn)
	require.NoError(e.t, err)
	out := make([]string, len(h))
	for i, ev := range h {
		out[i] = ev.Type
	}
	return out
}

// fakeTask is a scripted task handler: it answers with its responses in
// order (the last one repeats) and records every request.
type fakeTask struct {
	mu        sync.Mutex
	responses []fakeResponse
	requests  []sfn.TaskRequest
	tokens    chan string
}

type fakeResponse struct {
	Output json.RawMessage `json:"output,omitempty"`
	Echo   bool            `json:"echo,omitempty"`
	Error  string          `json:"error,omitempty"`
	Cause  string          `json:"cause,omitempty"`
	// Block makes the handler wait until the task is cancelled (timeout).
	Block bool `json:"block,omitempty"`
}

func newFake(responses ...fakeResponse) *fakeTask {
	return &fakeTask{responses: responses, tokens: make(chan string, 100)}
}

func (f *fakeTask) RunTask(ctx context.Context, req sfn.TaskRequest) (json.RawMessage, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	n := len(f.requests)
	var r fakeResponse
	if len(f.responses) > 0 {
		r = f.responses[min(n, len(f.responses))-1]
	}
	f.mu.Unlock()
	if req.TaskToken != "" {
		f.tokens <- req.TaskToken
	}
	switch {
	case r.Block:
		sfn.Blocked(ctx, func() { <-ctx.Done() })
		return nil, ctx.Err()
	case r.Error != "":
		return nil, &sfn.TaskError{Name: r.Error, Cause: r.Cause}
	case r.Echo:
		return req.Input, nil
	case r.Output != nil:
		return r.Output, nil
	}
	return json.RawMessage(`{}`), nil
}

func (f *fakeTask) inputs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.requests))
	for i, r := range f.requests {
		out[i] = string(r.Input)
	}
	return out
}

func TestSequentialStatesAndHistory(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.res.Handle("arn:aws:states:::test:echo", newFake(fakeResponse{Echo: true}))
	x := e.run(`{"StartAt":"A","States":{
		"A":{"Type":"Pass","Result":{"n":1},"ResultPath":"$.a","Next":"W"},
		"W":{"Type":"Wait","Seconds":600,"Next":"T"},
		"T":{"Type":"Task","Resource":"arn:aws:states:::test:echo","Parameters":{"v.$":"$.a.n"},"ResultPath":"$.t","End":true}}}`, `{"x":true}`)
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+x.Cause)
	require.JSONEq(t, `{"x":true,"a":{"n":1},"t":{"v":1}}`, x.Output)
	require.Equal(t, 10*time.Minute, x.StopDate.Sub(x.StartDate))
	require.Equal(t, []string{"ExecutionStarted", "PassStateEntered", "PassStateExited", "WaitStateEntered", "WaitStateExited",
		"TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited", "ExecutionSucceeded"}, e.eventTypes(x.ARN))
}
