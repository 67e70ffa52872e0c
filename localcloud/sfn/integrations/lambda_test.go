package integrations_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/invoke"
	"github.com/clubdev/club/localcloud/sfn"
	"github.com/clubdev/club/localcloud/sfn/integrations"
	"github.com/clubdev/club/localcloud/sfn/sfntest"
)

// PaymentDeclined is the kind of named error a product handler returns.
type PaymentDeclined struct{ Reason string }

func (e *PaymentDeclined) Error() string { return "payment declined: " + e.Reason }

// setupLambda is an executor whose Lambda integration invokes inv.
func setupLambda(t *testing.T, inv invoke.Invoker) *sfntest.Env {
	t.Helper()
	return sfntest.New(t, sfntest.Options{Integrations: integrations.Config{Invoker: inv}})
}

// run runs definition on input in a state machine of its own and returns
// the ended execution and its history.
func run(t *testing.T, e *sfntest.Env, definition, input string) (sfn.Execution, []sfn.HistoryEvent) {
	t.Helper()
	x := e.Run(definition, input)
	return x, e.History(x.ARN)
}

// A Lambda handler that returns a named Go error is caught by a Catch on
// that name, with the error document as the cause.
func TestNamedGoErrorIsCaughtByName(t *testing.T) {
	t.Parallel()
	fns := sfntest.NewFunctions()
	fns.Add("charge", func(_ context.Context, in struct{ Card string }) (string, error) {
		return "", &PaymentDeclined{Reason: in.Card + " expired"}
	})
	e := setupLambda(t, fns)
	x, h := run(t, e, `{"StartAt":"Charge","States":{
	  "Charge":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
	    "Parameters":{"FunctionName":"arn:aws:lambda:us-east-1:000000000000:function:charge","Payload.$":"$"},
	    "Catch":[{"ErrorEquals":["PaymentDeclined"],"ResultPath":"$.error","Next":"Declined"}],"End":true},
	  "Declined":{"Type":"Pass","End":true}}}`, `{"Card":"visa"}`)
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+" "+x.Cause)
	var out struct {
		Card  string
		Error struct{ Error, Cause string }
	}
	require.NoError(t, json.Unmarshal([]byte(x.Output), &out))
	require.Equal(t, "PaymentDeclined", out.Error.Error)
	require.JSONEq(t, `{"errorMessage":"payment declined: visa expired","errorType":"PaymentDeclined"}`, out.Error.Cause)
	failed := h[4]
	require.Equal(t, sfn.EventTaskFailed, failed.Type)
	require.Equal(t, "PaymentDeclined", failed.Details.Error)
	require.Equal(t, "lambda", failed.Details.ResourceType)
	require.Equal(t, "invoke", failed.Details.Resource)
}

// A handler that crashes is retried per Retry, and the retry succeeds.
func TestCrashedHandlerIsRetried(t *testing.T) {
	t.Parallel()
	fns := sfntest.NewFunctions()
	var calls int
	fns.Add("reserve", func(_ context.Context, in map[string]any) (map[string]any, error) {
		calls++
		if calls == 1 {
			panic("nil map write")
		}
		return map[string]any{"reserved": true}, nil
	})
	e := setupLambda(t, fns)
	x, h := run(t, e, `{"StartAt":"Reserve","States":{
	  "Reserve":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
	    "Parameters":{"FunctionName":"reserve","Payload.$":"$"},
	    "Retry":[{"ErrorEquals":["Runtime.ExitError"],"IntervalSeconds":2,"MaxAttempts":2}],
	    "ResultSelector":{"reserved.$":"$.Payload.reserved","status.$":"$.StatusCode"},"End":true}}}`, `{}`)
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+" "+x.Cause)
	require.JSONEq(t, `{"reserved":true,"status":200}`, x.Output)
	require.Equal(t, 2, fns.Calls("reserve"))
	require.Equal(t, 2*time.Second, x.StopDate.Sub(x.StartDate))
	require.Equal(t, []string{"ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskFailed",
		"TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited", "ExecutionSucceeded"}, sfntest.Types(h))
	require.Equal(t, "Runtime.ExitError", h[4].Details.Error)
}

func TestInvokeResultShapes(t *testing.T) {
	t.Parallel()
	fns := sfntest.NewFunctions()
	fns.Add("echo", func(_ context.Context, in map[string]any) (map[string]any, error) { return in, nil })
	fns.Add("text", func(context.Context) (string, error) { return "plain", nil })
	e := setupLambda(t, fns)

	x, _ := run(t, e, `{"StartAt":"I","States":{"I":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
	  "Parameters":{"FunctionName":"echo:live","Payload":{"a":1}},"End":true}}}`, `{}`)
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(x.Output), &out))
	require.Equal(t, map[string]any{"a": float64(1)}, out["Payload"])
	require.Equal(t, float64(200), out["StatusCode"])
	require.Equal(t, "$LATEST", out["ExecutedVersion"])
	require.Contains(t, out, "SdkHttpMetadata")
	require.Contains(t, out, "SdkResponseMetadata")

	// A bare function ARN: the output is the payload itself.
	x, h := run(t, e, `{"StartAt":"B","States":{"B":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:000000000000:function:echo","End":true}}}`, `{"b":2}`)
	require.JSONEq(t, `{"b":2}`, x.Output)
	require.Equal(t, []string{"ExecutionStarted", "TaskStateEntered", "LambdaFunctionScheduled", "LambdaFunctionStarted",
		"LambdaFunctionSucceeded", "TaskStateExited", "ExecutionSucceeded"}, sfntest.Types(h))
	require.Equal(t, "arn:aws:lambda:us-east-1:000000000000:function:echo", h[2].Details.Resource)

	x, _ = run(t, e, `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:000000000000:function:text","End":true}}}`, `{}`)
	require.Equal(t, `"plain"`, x.Output)
}

// rawInvoker answers every invocation with a fixed result.
type rawInvoker struct {
	res invoke.Result
	err error
}

func (r rawInvoker) Invoke(context.Context, string, []byte) (invoke.Result, error) {
	return r.res, r.err
}

// How function and platform failures are named, and which catchers match.
func TestFunctionErrorNames(t *testing.T) {
	t.Parallel()
	catchAll := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
	  "Parameters":{"FunctionName":"f"},
	  "Catch":[{"ErrorEquals":["States.Timeout"],"Next":"Timeout"},{"ErrorEquals":["States.TaskFailed"],"Next":"Failed"}],"End":true},
	  "Timeout":{"Type":"Pass","Result":"timeout","ResultPath":"$.via","End":true},
	  "Failed":{"Type":"Pass","Result":"failed","ResultPath":"$.via","End":true}}}`
	for _, tc := range []struct {
		name      string
		inv       rawInvoker
		wantErr   string
		via       string
		jsonCause bool
	}{
		{"function timeout", rawInvoker{res: sfntest.Failure("Sandbox.Timedout", "Task timed out after 3.00 seconds")}, "Sandbox.Timedout", "failed", true},
		{"process exit", rawInvoker{res: sfntest.Failure("Runtime.ExitError", "exit status 2")}, "Runtime.ExitError", "failed", true},
		{"no error type", rawInvoker{res: invoke.Result{Payload: []byte(`{"errorMessage":"oops"}`), FunctionError: "Unhandled"}}, "Lambda.Unknown", "failed", true},
		{"error payload not JSON", rawInvoker{res: invoke.Result{Payload: []byte(`killed`), FunctionError: "Unhandled"}}, "Lambda.Unknown", "failed", true},
		{"invoker failure", rawInvoker{err: errors.New("connection refused")}, "Lambda.ServiceException", "failed", false},
		{"invoker deadline", rawInvoker{err: fmt.Errorf("invoke f: %w", context.DeadlineExceeded)}, "Lambda.ClientExecutionTimeoutException", "failed", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setupLambda(t, tc.inv)
			x, h := run(t, e, catchAll, `{}`)
			require.Equal(t, sfn.StatusSucceeded, x.Status)
			var out struct{ Error, Cause, Via string }
			require.NoError(t, json.Unmarshal([]byte(x.Output), &out))
			require.Equal(t, tc.wantErr, out.Error)
			require.Equal(t, tc.via, out.Via)
			if tc.jsonCause {
				require.True(t, json.Valid([]byte(out.Cause)), "the cause is the error document: %s", out.Cause)
			}
			require.Equal(t, tc.wantErr, h[4].Details.Error)
		})
	}
}

// lambda:invoke.waitForTaskToken: the function gets the token in its
// payload and the task ends with the callback, not with the function.
func TestLambdaCallback(t *testing.T) {
	t.Parallel()
	fns := sfntest.NewFunctions()
	tokens := make(chan string, 1)
	fns.Add("notify", func(_ context.Context, in struct{ Token string }) (string, error) {
		tokens <- in.Token
		return "queued", nil
	})
	e := setupLambda(t, fns)
	ctx := context.Background()
	sm, err := e.Service.CreateStateMachine(ctx, sfn.CreateStateMachineInput{Name: "cb", Definition: `{"StartAt":"W","States":{"W":{
	  "Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
	  "Parameters":{"FunctionName":"notify","Payload":{"Token.$":"$$.Task.Token"}},"End":true}}}`})
	require.NoError(t, err)
	x, err := e.Service.StartExecution(ctx, sfn.StartExecutionInput{StateMachineArn: sm.ARN})
	require.NoError(t, err)
	require.NoError(t, e.Service.SendTaskSuccess(ctx, <-tokens, `{"paid":true}`))
	done, err := e.Service.WaitForCompletion(ctx, x.ARN)
	require.NoError(t, err)
	require.Equal(t, sfn.StatusSucceeded, done.Status)
	require.JSONEq(t, `{"paid":true}`, done.Output)
}

func TestInvokeParametersAreChecked(t *testing.T) {
	t.Parallel()
	e := setupLambda(t, sfntest.NewFunctions())
	_, err := e.Service.CreateStateMachine(context.Background(), sfn.CreateStateMachineInput{Name: "bad", Definition: `{"StartAt":"I","States":{
	  "I":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"Function":"f","Paylod.$":"$"},"End":true}}}`})
	require.ErrorIs(t, err, sfn.ErrCode(sfn.CodeInvalidDefinition))
	require.Contains(t, err.Error(), `the field "Paylod" is not supported by arn:aws:states:::lambda:invoke`)
	require.Contains(t, err.Error(), `the field "FunctionName" is required`)
	require.Contains(t, err.Error(), "at /States/I/Parameters")
}
