package sfntest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/invoke"
	"github.com/clubdev/club/localcloud/sfn"
	"github.com/clubdev/club/localcloud/sfn/integrations"
	"github.com/clubdev/club/localcloud/sfn/sfntest"
)

const hourWait = `{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":3600,"End":true}}}`

// TestRunSkipsIdleTime: by default an hour's Wait passes as soon as the
// execution is blocked on it, on a clock that starts at Epoch.
func TestRunSkipsIdleTime(t *testing.T) {
	t.Parallel()
	e := sfntest.New(t, sfntest.Options{})
	x := e.Run(hourWait, `{"a":1}`)
	require.Equal(t, sfn.StatusSucceeded, x.Status)
	require.Equal(t, sfntest.Epoch, x.StartDate)
	require.Equal(t, time.Hour, x.StopDate.Sub(x.StartDate))
	require.Equal(t, []string{"ExecutionStarted", "WaitStateEntered", "WaitStateExited", "ExecutionSucceeded"}, e.EventTypes(x.ARN))
}

// TestManualTimeMovesOnlyWithAdvance: with Manual, the Wait ends only when
// the test moves time, and then exactly when the test says.
func TestManualTimeMovesOnlyWithAdvance(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 3, 12, 0, 0, 0, time.UTC)
	e := sfntest.New(t, sfntest.Options{Start: start, Manual: true})
	machine := e.CreateStateMachine("hold", hourWait)
	arn := e.StartNamed(machine, "x-1", `{}`)
	require.Equal(t, sfntest.ExecutionARN(machine, "x-1"), arn)
	e.Advance(59 * time.Minute)
	x, err := e.Service.DescribeExecution(context.Background(), arn)
	require.NoError(t, err)
	require.Equal(t, sfn.StatusRunning, x.Status, "59 minutes into an hour's wait")
	e.Advance(time.Minute)
	x = e.Wait(arn)
	require.Equal(t, sfn.StatusSucceeded, x.Status)
	require.Equal(t, start.Add(time.Hour), x.StopDate)
}

// TestClientGoesThroughTheHTTPAPI: the SDK client reaches the same
// executor, with its registered resources.
func TestClientGoesThroughTheHTTPAPI(t *testing.T) {
	t.Parallel()
	e := sfntest.New(t, sfntest.Options{})
	e.Handle("arn:aws:states:::test:echo", sfn.TaskFunc(func(_ context.Context, req sfn.TaskRequest) (json.RawMessage, error) {
		return req.Input, nil
	}))
	machine := e.CreateStateMachine("echo", `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::test:echo","End":true}}}`)
	out, err := e.Client().StartExecution(context.Background(), &awssfn.StartExecutionInput{
		StateMachineArn: aws.String(machine), Name: aws.String("x-1"), Input: aws.String(`{"b":2}`),
	})
	require.NoError(t, err)
	require.Equal(t, sfntest.ExecutionARN(machine, "x-1"), aws.ToString(out.ExecutionArn))
	x := e.Wait(aws.ToString(out.ExecutionArn))
	require.Equal(t, sfn.StatusSucceeded, x.Status)
	require.JSONEq(t, `{"b":2}`, x.Output)
}

// fatalRecorder stands in for a test to see whether a helper fails it.
type fatalRecorder struct {
	testing.TB
	failed string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestDefinitionReadsTheRepositorysStateMachines: the purchase saga's
// definition with the template's substitutions applied, and a placeholder
// left without a value fails the test.
func TestDefinitionReadsTheRepositorysStateMachines(t *testing.T) {
	t.Parallel()
	const fn = "arn:aws:lambda:us-east-1:000000000000:function:purchase-tasks"
	def := sfntest.Definition(t, "purchase.asl.json", map[string]string{"PurchaseTasksFunctionArn": fn, "Partition": "aws"})
	require.Contains(t, def, fn)
	require.NotContains(t, def, "${")
	e := sfntest.New(t, sfntest.Options{Integrations: integrations.Config{Invoker: sfntest.NewFunctions()}})
	e.CreateStateMachine("purchase", def) // a valid definition for the executor

	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sfntest.Definition(r, "purchase.asl.json", map[string]string{"Partition": "aws"})
	}()
	<-done
	require.Contains(t, r.failed, "${PurchaseTasksFunctionArn}")
}

type declined struct{}

func (*declined) Error() string { return "card declined" }

// TestFunctionsAnswerAsTheInvokeAPI: a named error, a panic, an unknown
// function and an intercepted invocation, as Lambda answers them.
func TestFunctionsAnswerAsTheInvokeAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fns := sfntest.NewFunctions()
	fns.Add("ok", func(_ context.Context, in map[string]int) (map[string]int, error) {
		return map[string]int{"n": in["n"] + 1}, nil
	})
	fns.Add("declines", func(context.Context) error { return &declined{} })
	fns.Add("crashes", func(context.Context) error { panic("nil map write") })

	res, err := fns.Invoke(ctx, "ok", []byte(`{"n":1}`))
	require.NoError(t, err)
	require.False(t, res.Failed())
	require.JSONEq(t, `{"n":2}`, string(res.Payload))

	res, err = fns.Invoke(ctx, "declines", []byte(`{}`))
	require.NoError(t, err)
	require.Equal(t, invoke.ErrorInfo{ErrorMessage: "card declined", ErrorType: "declined"}, res.Error())

	res, err = fns.Invoke(ctx, "crashes", []byte(`{}`))
	require.NoError(t, err)
	require.Equal(t, "Runtime.ExitError", res.Error().ErrorType)
	require.Contains(t, res.Error().ErrorMessage, "nil map write")

	_, err = fns.Invoke(ctx, "missing", []byte(`{}`))
	require.ErrorContains(t, err, "not found")

	fns.Intercept(func(name string, payload []byte) (invoke.Result, error, bool) {
		if name == "ok" && strings.Contains(string(payload), "throttle") {
			return invoke.Result{}, errors.New("TooManyRequestsException"), true
		}
		return invoke.Result{}, nil, false
	})
	_, err = fns.Invoke(ctx, "ok", []byte(`{"throttle":1}`))
	require.ErrorContains(t, err, "TooManyRequestsException")
	res, err = fns.Invoke(ctx, "ok", []byte(`{"n":5}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"n":6}`, string(res.Payload))
	require.Equal(t, 3, fns.Calls("ok"), "intercepted invocations count too")
}
