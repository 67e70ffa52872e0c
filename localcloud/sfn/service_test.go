package sfn_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/localcloud/sfn"
)

const passDefinition = `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`

const waitDefinition = `{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":3600,"End":true}}}`

// An execution runs for ten hours of virtual time (kumo stops at five
// minutes) and its whole history is readable.
func TestLongExecutionKeepsWholeHistory(t *testing.T) {
	t.Parallel()
	e := setup(t)
	arn := e.Start(e.CreateStateMachine("long", `{
	  "StartAt": "Init",
	  "States": {
	    "Init": {"Type": "Pass", "Result": {"i": 0}, "Next": "Sleep"},
	    "Sleep": {"Type": "Wait", "Seconds": 3600, "Next": "Count"},
	    "Count": {"Type": "Pass", "Parameters": {"i.$": "States.MathAdd($.i, 1)"}, "Next": "More"},
	    "More": {"Type": "Choice", "Choices": [{"Variable": "$.i", "NumericLessThan": 10, "Next": "Sleep"}], "Default": "Done"},
	    "Done": {"Type": "Succeed"}
	  }}`), `{}`)
	x := e.Wait(arn)
	require.Equal(t, sfn.StatusSucceeded, x.Status)
	require.JSONEq(t, `{"i":10}`, x.Output)
	require.Equal(t, 10*time.Hour, x.StopDate.Sub(x.StartDate))

	h, err := e.Service.GetExecutionHistory(context.Background(), arn)
	require.NoError(t, err)
	require.Len(t, h, 1+2+10*6+2+1)
	require.Equal(t, sfn.EventExecutionStarted, h[0].Type)
	require.Equal(t, sfn.EventExecutionSucceeded, h[len(h)-1].Type)
	waits := 0
	for i, ev := range h {
		require.Equal(t, int64(i+1), ev.ID)
		if i > 0 {
			require.Equal(t, int64(i), ev.PreviousEventID, "a sequential execution chains every event to the one before")
			require.False(t, ev.Timestamp.Before(h[i-1].Timestamp))
		}
		if ev.Type == "WaitStateExited" {
			waits++
			require.Equal(t, epoch.Add(time.Duration(waits)*time.Hour), ev.Timestamp)
		}
	}
	require.Equal(t, 10, waits)
}

func TestStartExecutionNamesAreIdempotent(t *testing.T) {
	t.Parallel()
	e := manual(t)
	ctx := context.Background()
	machine := e.CreateStateMachine("idem", waitDefinition)
	start := func(input string) (sfn.Execution, error) {
		return e.Service.StartExecution(ctx, sfn.StartExecutionInput{StateMachineArn: machine, Name: "purchase-1", Input: input})
	}
	first, err := start(`{"a": 1}`)
	require.NoError(t, err)
	again, err := start(`{"a":1}`)
	require.NoError(t, err, "same name and input while running returns the execution")
	require.Equal(t, first.ARN, again.ARN)
	require.Equal(t, first.StartDate, again.StartDate)

	_, err = start(`{"a":2}`)
	require.ErrorIs(t, err, sfn.ErrCode(sfn.CodeExecutionAlreadyExists))

	e.Advance(time.Hour)
	e.Wait(first.ARN)
	_, err = start(`{"a":1}`)
	require.ErrorIs(t, err, sfn.ErrCode(sfn.CodeExecutionAlreadyExists), "a closed execution's name cannot be reused")

	list, err := e.Service.ListExecutions(ctx, machine, "")
	require.NoError(t, err)
	require.Len(t, list, 1)
}

func TestStopExecutionAbortsTask(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var cancelled atomic.Bool
	started := make(chan struct{})
	e.Resources.Handle("arn:aws:states:::test:slow", sfn.TaskFunc(func(ctx context.Context, _ sfn.TaskRequest) (json.RawMessage, error) {
		close(started)
		sfn.Blocked(ctx, func() { <-ctx.Done() })
		cancelled.Store(true)
		return nil, ctx.Err()
	}))
	arn := e.Start(e.CreateStateMachine("stop", `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::test:slow","End":true}}}`), `{}`)
	<-started
	x, err := e.Service.StopExecution(context.Background(), arn, "Operator.Stop", "stopped by a test")
	require.NoError(t, err)
	require.Equal(t, sfn.StatusAborted, x.Status)
	require.Equal(t, "Operator.Stop", x.Error)
	require.Equal(t, "stopped by a test", x.Cause)
	require.Eventually(t, cancelled.Load, patience.Wait(), time.Millisecond, "the handler's context is cancelled")
	require.Equal(t, []string{"ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskStateAborted", "ExecutionAborted"},
		e.EventTypes(arn))

	again, err := e.Service.StopExecution(context.Background(), arn, "", "")
	require.NoError(t, err, "stopping a closed execution changes nothing")
	require.Equal(t, x.StopDate, again.StopDate)
}

func TestUpdateKeepsRunningExecutionsOnTheirDefinition(t *testing.T) {
	t.Parallel()
	e := manual(t)
	ctx := context.Background()
	machine := e.CreateStateMachine("upd", `{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":60,"Next":"P"},"P":{"Type":"Pass","Result":"v1","End":true}}}`)
	old := e.Start(machine, `{}`)
	v2 := `{"StartAt":"P","States":{"P":{"Type":"Pass","Result":"v2","End":true}}}`
	_, err := e.Service.UpdateStateMachine(ctx, machine, &v2, nil)
	require.NoError(t, err)
	require.Equal(t, `"v2"`, e.Wait(e.Start(machine, `{}`)).Output)
	e.Advance(time.Minute)
	require.Equal(t, `"v1"`, e.Wait(old).Output)
	sm, err := e.Service.DescribeStateMachineForExecution(ctx, old)
	require.NoError(t, err)
	require.Contains(t, sm.Definition, `"v1"`)
}

func TestStateMachineLifecycle(t *testing.T) {
	t.Parallel()
	e := manual(t)
	ctx := context.Background()
	in := sfn.CreateStateMachineInput{Name: "life", Definition: passDefinition, RoleArn: "arn:aws:iam::000000000000:role/r"}
	sm, err := e.Service.CreateStateMachine(ctx, in)
	require.NoError(t, err)
	require.Equal(t, "arn:aws:states:us-east-1:000000000000:stateMachine:life", sm.ARN)
	again, err := e.Service.CreateStateMachine(ctx, in)
	require.NoError(t, err, "creating the same machine twice is idempotent")
	require.Equal(t, sm.CreationDate, again.CreationDate)

	in.Definition = waitDefinition
	_, err = e.Service.CreateStateMachine(ctx, in)
	require.ErrorIs(t, err, sfn.ErrCode(sfn.CodeStateMachineAlreadyExists))
	_, err = e.Service.CreateStateMachine(ctx, sfn.CreateStateMachineInput{Name: "bad name", Definition: passDefinition})
	require.ErrorIs(t, err, sfn.ErrCode(sfn.CodeInvalidName))
	_, err = e.Service.CreateStateMachine(ctx, sfn.CreateStateMachineInput{Name: "fast", Definition: passDefinition, Type: "EXPRESS"})
	require.ErrorIs(t, err, sfn.ErrCode(sfn.CodeStateMachineTypeNotSupp))
	_, err = e.Service.StartExecution(ctx, sfn.StartExecutionInput{StateMachineArn: sm.ARN, Input: `{oops`})
	require.ErrorIs(t, err, sfn.ErrCode(sfn.CodeInvalidExecutionInput))

	done := e.Wait(e.Start(sm.ARN, `{"k":1}`))
	require.Equal(t, sfn.StatusSucceeded, done.Status)
	running := e.Start(e.CreateStateMachine("life2", waitDefinition), `{}`)
	list, err := e.Service.ListExecutions(ctx, sm.ARN, sfn.StatusSucceeded)
	require.NoError(t, err)
	require.Len(t, list, 1)

	require.NoError(t, e.Service.DeleteStateMachine(ctx, sm.ARN))
	_, err = e.Service.DescribeStateMachine(ctx, sm.ARN)
	require.ErrorIs(t, err, sfn.ErrCode(sfn.CodeStateMachineDoesNotExist))
	_, err = e.Service.StartExecution(ctx, sfn.StartExecutionInput{StateMachineArn: sm.ARN})
	require.ErrorIs(t, err, sfn.ErrCode(sfn.CodeStateMachineDoesNotExist))
	kept, err := e.Service.DescribeExecution(ctx, done.ARN)
	require.NoError(t, err, "executions outlive their deleted machine")
	require.JSONEq(t, `{"k":1}`, kept.Output)

	_, err = e.Service.DescribeExecution(ctx, "arn:aws:states:us-east-1:000000000000:execution:life:nope")
	require.ErrorIs(t, err, sfn.ErrCode(sfn.CodeExecutionDoesNotExist))
	_, err = e.Service.DescribeExecution(ctx, "not-an-arn")
	require.ErrorIs(t, err, sfn.ErrCode(sfn.CodeInvalidArn))
	x, err := e.Service.DescribeExecution(ctx, running)
	require.NoError(t, err)
	require.Equal(t, sfn.StatusRunning, x.Status)
}

func TestMapRespectsMaxConcurrency(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var inFlight, peak atomic.Int32
	e.Resources.Handle("arn:aws:states:::test:work", sfn.TaskFunc(func(ctx context.Context, req sfn.TaskRequest) (json.RawMessage, error) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(time.Millisecond) // let other iterations overlap if they could
		inFlight.Add(-1)
		return req.Input, nil
	}))
	x := e.Run(`{"StartAt":"M","States":{"M":{"Type":"Map","MaxConcurrency":2,"ItemsPath":"$.items",
	  "ItemSelector":{"i.$":"$$.Map.Item.Index","v.$":"$$.Map.Item.Value"},
	  "ItemProcessor":{"StartAt":"W","States":{"W":{"Type":"Task","Resource":"arn:aws:states:::test:work","End":true}}},
	  "ResultSelector":{"n.$":"States.ArrayLength($)","last.$":"$[-1]"},"End":true}}}`,
		`{"items":["a","b","c","d","e","f","g","h"]}`)
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Cause)
	require.JSONEq(t, `{"n":8,"last":{"i":7,"v":"h"}}`, x.Output)
	require.LessOrEqual(t, peak.Load(), int32(2))
	require.GreaterOrEqual(t, peak.Load(), int32(1))
}
