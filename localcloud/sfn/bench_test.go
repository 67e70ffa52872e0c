package sfn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/invoke"
	"github.com/clubdev/club/localcloud/sfn"
	"github.com/clubdev/club/localcloud/sfn/integrations"
)

// benchDefinition has six states, two of them Lambda tasks (one through
// lambda:invoke, one through a bare function ARN), with the path and
// intrinsic processing a real saga does.
const benchDefinition = `{
  "StartAt": "Validate",
  "States": {
    "Validate": {"Type": "Pass", "Parameters": {"purchase.$": "$.purchase", "amount.$": "$.amount", "execution.$": "$$.Execution.Name"}, "Next": "Reserve"},
    "Reserve": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": {"FunctionName": "reserve", "Payload.$": "$"},
      "ResultSelector": {"ok.$": "$.Payload.ok"}, "ResultPath": "$.reservation",
      "Retry": [{"ErrorEquals": ["Lambda.ServiceException"], "MaxAttempts": 2}], "Next": "Check"},
    "Check": {"Type": "Choice", "Choices": [{"Variable": "$.reservation.ok", "BooleanEquals": true, "Next": "Charge"}], "Default": "Done"},
    "Charge": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:000000000000:function:charge", "ResultPath": "$.payment",
      "Catch": [{"ErrorEquals": ["PaymentDeclined"], "Next": "Done"}], "Next": "Record"},
    "Record": {"Type": "Pass", "Parameters": {"summary.$": "States.Format('purchase {} charged {}', $.purchase, $.amount)"}, "ResultPath": "$.record", "Next": "Done"},
    "Done": {"Type": "Succeed"}
  }
}`

const benchStates = 6

// instantFunctions answers every invocation at once, so that the measured
// time is the executor's own.
type instantFunctions struct{ calls atomic.Int64 }

func (f *instantFunctions) Invoke(_ context.Context, name string, _ []byte) (invoke.Result, error) {
	f.calls.Add(1)
	if name == "reserve" {
		return invoke.Result{Payload: []byte(`{"ok":true,"seat":12}`)}, nil
	}
	return invoke.Result{Payload: []byte(`{"charged":true}`)}, nil
}

// runConcurrent starts n executions at once on the real clock, waits for
// all of them and returns the wall time and the mean execution latency.
func runConcurrent(tb testing.TB, n int) (wall, meanLatency time.Duration) {
	tb.Helper()
	res := sfn.NewResources()
	fns := &instantFunctions{}
	integrations.NewLambda(fns).Register(res)
	svc := sfn.New(sfn.Options{Resources: res})
	defer svc.Close()
	ctx := context.Background()
	sm, err := svc.CreateStateMachine(ctx, sfn.CreateStateMachineInput{Name: "bench", Definition: benchDefinition})
	require.NoError(tb, err)
	arns := make([]string, n)
	began := time.Now()
	for i := range n {
		input, _ := json.Marshal(map[string]any{"purchase": fmt.Sprintf("p-%d", i), "amount": 4200})
		x, err := svc.StartExecution(ctx, sfn.StartExecutionInput{StateMachineArn: sm.ARN, Input: string(input)})
		require.NoError(tb, err)
		arns[i] = x.ARN
	}
	var total time.Duration
	for _, arn := range arns {
		x, err := svc.WaitForCompletion(ctx, arn)
		require.NoError(tb, err)
		require.Equal(tb, sfn.StatusSucceeded, x.Status, x.Cause)
		total += x.StopDate.Sub(x.StartDate)
	}
	wall = time.Since(began)
	require.Equal(tb, int64(2*n), fns.calls.Load())
	return wall, total / time.Duration(n)
}

// BenchmarkConcurrentExecutions runs 1,000 concurrent executions of the
// six-state definition per iteration. ns/transition is wall time divided
// by the state transitions of all executions: the executor's cost per
// transition, as the Lambda fakes answer instantly.
func BenchmarkConcurrentExecutions(b *testing.B) {
	const n = 1000
	var wall, latency time.Duration
	for b.Loop() {
		w, l := runConcurrent(b, n)
		wall += w
		latency += l
	}
	transitions := float64(b.N * n * benchStates)
	b.ReportMetric(float64(wall.Nanoseconds())/transitions, "ns/transition")
	b.ReportMetric(transitions/wall.Seconds(), "transitions/s")
	b.ReportMetric(float64(latency.Microseconds())/float64(b.N)/1000, "ms/execution-latency")
}
