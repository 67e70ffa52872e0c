package sfn_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/sfn"
	"github.com/clubdev/club/localcloud/sfn/sfntest"
)

// epoch is where virtual time starts in every test.
var epoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// setup is an executor on a virtual clock that skips idle time, with its
// resource registry (package sfntest).
func setup(t *testing.T) *sfntest.Env { return sfntest.New(t, sfntest.Options{Start: epoch}) }

// manual is setup without auto-advance: time moves only with Advance.
func manual(t *testing.T) *sfntest.Env {
	return sfntest.New(t, sfntest.Options{Start: epoch, Manual: true})
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
	e.Resources.Handle("arn:aws:states:::test:echo", newFake(fakeResponse{Echo: true}))
	x := e.Run(`{"StartAt":"A","States":{
		"A":{"Type":"Pass","Result":{"n":1},"ResultPath":"$.a","Next":"W"},
		"W":{"Type":"Wait","Seconds":600,"Next":"T"},
		"T":{"Type":"Task","Resource":"arn:aws:states:::test:echo","Parameters":{"v.$":"$.a.n"},"ResultPath":"$.t","End":true}}}`, `{"x":true}`)
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+x.Cause)
	require.JSONEq(t, `{"x":true,"a":{"n":1},"t":{"v":1}}`, x.Output)
	require.Equal(t, 10*time.Minute, x.StopDate.Sub(x.StartDate))
	require.Equal(t, []string{"ExecutionStarted", "PassStateEntered", "PassStateExited", "WaitStateEntered", "WaitStateExited",
		"TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited", "ExecutionSucceeded"}, e.EventTypes(x.ARN))
}
