package integrations_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/localcloud/invoke"
	"github.com/clubdev/club/internal/localcloud/sfn"
	"github.com/clubdev/club/internal/localcloud/sfn/clock"
	"github.com/clubdev/club/internal/localcloud/sfn/integrations"
)

// goFunctions is an invoke.Invoker that runs aws-lambda-go handlers in the
// test process and answers as the Lambda Invoke API does for a function
// process: a returned error becomes {"errorMessage", "errorType"} with the
// Go type name as errorType (aws-lambda-go's rule), and a panic, which makes
// a real function process exit, becomes Runtime.ExitError.
type goFunctions struct {
	mu       sync.Mutex
	handlers map[string]lambda.Handler
	calls    map[string]int
}

func newFunctions() *goFunctions {
	return &goFunctions{handlers: map[string]lambda.Handler{}, calls: map[string]int{}}
}

func (g *goFunctions) add(name string, handler any) { g.handlers[name] = lambda.NewHandler(handler) }

func (g *goFunctions) count(name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[name]
}

func (g *goFunctions) Invoke(ctx context.Context, name string, payload []byte) (res invoke.Result, err error) {
	g.mu.Lock()
	h, ok := g.handlers[name]
	g.calls[name]++
	g.mu.Unlock()
	if !ok {
		return invoke.Result{}, fmt.Errorf("function %s: not found", name)
	}
	defer func() {
		if p := recover(); p != nil {
			res = failure("Runtime.ExitError", fmt.Sprintf("RequestId: test Error: Runtime exited with error: exit status 2 (panic: %v)", p))
		}
	}()
	out, herr := h.Invoke(ctx, payload)
	if herr != nil {
		t := reflect.TypeOf(herr)
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		return failure(t.Name(), herr.Error()), nil
	}
	return invoke.Result{Payload: out}, nil
}

func failure(errorType, msg string) invoke.Result {
	b, _ := json.Marshal(invoke.ErrorInfo{ErrorMessage: msg, ErrorType: errorType})
	return invoke.Result{Payload: b, FunctionError: "Unhandled"}
}

// PaymentDeclined is the kind of named error a product handler returns.
type PaymentDeclined struct{ Reason string }

func (e *PaymentDeclined) Error() string { return "payment declined: " + e.Reason }

func setupLambda(t *testing.T, inv invoke.Invoker) *sfn.Service {
	t.Helper()
	clk := clock.NewVirtual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	res := sfn.NewResources()
	integrations.NewLambda(inv).Register(res)
	svc := sfn.New(sfn.Options{Clock: clk, Resources: res})
	stop := clk.AutoAdvance()
	t.Cleanup(func() {
		svc.Close()
		stop()
	})
	return svc
}

var machines atomic.Int64

func run(t *testing.T, svc *sfn.Service, definition, input string) (sfn.Execution, []sfn.HistoryEvent) {
	t.Helper()
	ctx := context.Background()
	sm, err := svc.CreateStateMachine(ctx, sfn.CreateStateMachineInput{Name: fmt.Sprintf("m%d", machines.Add(1)), Definition: definition})
	require.NoError(t, err)
	x, err := svc.StartExecution(ctx, sfn.StartExecutionInput{StateMachineArn: sm.ARN, Input: input})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	done, err := svc.WaitForCompletion(wctx, x.ARN)
	require.NoError(t, err)
	h, err := svc.GetExecutionHistory(ctx, x.ARN)
	require.NoError(t, err)
	return done, h
}

func types(h []sfn.HistoryEvent) []string {
	out := make([]string, len(h))
	for i, e := range h {
		out[i] = e.Type
	}
	return out
}

// A Lambda handler that returns a named Go error is caught by a Catch on
// that name, with the error document as the cause.
func TestNamedGoErrorIsCaughtByName(t *testing.T) {
	t.Parallel()
	fns := newFunctions()
	fns.add("charge", func(_ context.Context, in struct{ Card string }) (string, error) {
		return "", &PaymentDeclined{Reason: in.Card + " expired"}
	})
	svc := setupLambda(t, fns)
	x, h := run(t, svc, `{"StartAt":"Charge","States":{
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
	fns := newFunctions()
	var calls int
	fns.add("reserve", func(_ context.Context, in map[string]any) (map[string]any, error) {
		calls++
		if calls == 1 {
			panic("nil map write")
		}
		return map[string]any{"reserved": true}, nil
	})
	svc := setupLambda(t, fns)
	x, h := run(t, svc, `{"StartAt":"Reserve","States":{
	  "Reserve":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
	    "Parameters":{"FunctionName":"reserve","Payload.$":"$"},
	    "Retry":[{"ErrorEquals":["Runtime.ExitError"],"IntervalSeconds":2,"MaxAttempts":2}],
	    "ResultSelector":{"reserved.$":"$.Payload.reserved","status.$":"$.StatusCode"},"End":true}}}`, `{}`)
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+" "+x.Cause)
	require.JSONEq(t, `{"reserved":true,"status":200}`, x.Output)
	require.Equal(t, 2, fns.count("reserve"))
	require.Equal(t, 2*time.Second, x.StopDate.Sub(x.StartDate))
	require.Equal(t, []string{"ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskFailed",
		"TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited", "ExecutionSucceeded"}, types(h))
	require.Equal(t, "Runtime.ExitError", h[4].Details.Error)
}

func TestInvokeResultShapes(t *testing.T) {
	t.Parallel()
	fns := newFunctions()
	fns.add("echo", func(_ context.Context, in map[string]any) (map[string]any, error) { return in, nil })
	fns.add("text", func(context.Context) (string, error) { return "plain", nil })
	svc := setupLambda(t, fns)

	x, _ := run(t, svc, `{"StartAt":"I","States":{"I":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
	  "Parameters":{"FunctionName":"echo:live","Payload":{"a":1}},"End":true}}}`, `{}`)
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(x.Output), &out))
	require.Equal(t, map[string]any{"a": float64(1)}, out["Payload"])
	require.Equal(t, float64(200), out["StatusCode"])
	require.Equal(t, "$LATEST", out["ExecutedVersion"])
	require.Contains(t, out, "SdkHttpMetadata")
	require.Contains(t, out, "SdkResponseMetadata")

	// A bare function ARN: the output is the payload itself.
	x, h := run(t, svc, `{"StartAt":"B","States":{"B":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:000000000000:function:echo","End":true}}}`, `{"b":2}`)
	require.JSONEq(t, `{"b":2}`, x.Output)
	require.Equal(t, []string{"ExecutionStarted", "TaskStateEntered", "LambdaFunctionScheduled", "LambdaFunctionStarted",
		"LambdaFunctionSucceeded", "TaskStateExited", "ExecutionSucceeded"}, types(h))
	require.Equal(t, "arn:aws:lambda:us-east-1:000000000000:function:echo", h[2].Details.Resource)

	x, _ = run(t, svc, `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:000000000000:function:text","End":true}}}`, `{}`)
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
		{"function timeout", rawInvoker{res: failure("Sandbox.Timedout", "Task timed out after 3.00 seconds")}, "Sandbox.Timedout", "failed", true},
		{"process exit", rawInvoker{res: failure("Runtime.ExitError", "exit status 2")}, "Runtime.ExitError", "failed", true},
		{"no error type", rawInvoker{res: invoke.Result{Payload: []byte(`{"errorMessage":"oops"}`), FunctionError: "Unhandled"}}, "Lambda.Unknown", "failed", true},
		{"error payload not JSON", rawInvoker{res: invoke.Result{Payload: []byte(`killed`), FunctionError: "Unhandled"}}, "Lambda.Unknown", "failed", true},
		{"invoker failure", rawInvoker{err: errors.New("connection refused")}, "Lambda.ServiceException", "failed", false},
		{"invoker deadline", rawInvoker{err: fmt.Errorf("invoke f: %w", context.DeadlineExceeded)}, "Lambda.ClientExecutionTimeoutException", "failed", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			svc := setupLambda(t, tc.inv)
			x, h := run(t, svc, catchAll, `{}`)
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
	fns := newFunctions()
	tokens := make(chan string, 1)
	fns.add("notify", func(_ context.Context, in struct{ Token string }) (string, error) {
		tokens <- in.Token
		return "queued", nil
	})
	svc := setupLambda(t, fns)
	ctx := context.Background()
	sm, err := svc.CreateStateMachine(ctx, sfn.CreateStateMachineInput{Name: "cb", Definition: `{"StartAt":"W","States":{"W":{
	  "Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
	  "Parameters":{"FunctionName":"notify","Payload":{"Token.$":"$$.Task.Token"}},"End":true}}}`})
	require.NoError(t, err)
	x, err := svc.StartExecution(ctx, sfn.StartExecutionInput{StateMachineArn: sm.ARN})
	require.NoError(t, err)
	require.NoError(t, svc.SendTaskSuccess(ctx, <-tokens, `{"paid":true}`))
	done, err := svc.WaitForCompletion(ctx, x.ARN)
	require.NoError(t, err)
	require.Equal(t, sfn.StatusSucceeded, done.Status)
	require.JSONEq(t, `{"paid":true}`, done.Output)
}

func TestInvokeParametersAreChecked(t *testing.T) {
	t.Parallel()
	svc := setupLambda(t, newFunctions())
	_, err := svc.CreateStateMachine(context.Background(), sfn.CreateStateMachineInput{Name: "bad", Definition: `{"StartAt":"I","States":{
	  "I":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"Function":"f","Paylod.$":"$"},"End":true}}}`})
	require.ErrorIs(t, err, sfn.ErrCode(sfn.CodeInvalidDefinition))
	require.Contains(t, err.Error(), `the field "Paylod" is not supported by arn:aws:states:::lambda:invoke`)
	require.Contains(t, err.Error(), `the field "FunctionName" is required`)
	require.Contains(t, err.Error(), "at /States/I/Parameters")
}
