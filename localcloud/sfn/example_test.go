package sfn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/clubdev/club/localcloud/sfn"
	"github.com/clubdev/club/localcloud/sfn/clock"
)

// A saga step in a Go test: a fake task handler by resource ARN, a virtual
// clock that skips the one-hour Wait, and the execution's history.
func Example() {
	res := sfn.NewResources()
	res.Handle("arn:aws:states:::test:reserve", sfn.TaskFunc(func(_ context.Context, req sfn.TaskRequest) (json.RawMessage, error) {
		var in struct{ Seats int }
		if err := json.Unmarshal(req.Input, &in); err != nil {
			return nil, err
		}
		if in.Seats > 2 {
			return nil, &sfn.TaskError{Name: "NoSeats", Cause: "only 2 left"}
		}
		return json.RawMessage(`{"reserved":true}`), nil
	}))
	clk := clock.NewVirtual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	defer clk.AutoAdvance()()
	svc := sfn.New(sfn.Options{Clock: clk, Resources: res})
	defer svc.Close()

	ctx := context.Background()
	sm, err := svc.CreateStateMachine(ctx, sfn.CreateStateMachineInput{Name: "reserve", Definition: `{
	  "StartAt": "Reserve",
	  "States": {
	    "Reserve": {"Type": "Task", "Resource": "arn:aws:states:::test:reserve", "ResultPath": "$.result",
	      "Catch": [{"ErrorEquals": ["NoSeats"], "ResultPath": "$.error", "Next": "Later"}], "Next": "Done"},
	    "Later": {"Type": "Wait", "Seconds": 3600, "Next": "Done"},
	    "Done": {"Type": "Succeed"}
	  }}`})
	if err != nil {
		fmt.Println(err)
		return
	}
	x, err := svc.StartExecution(ctx, sfn.StartExecutionInput{StateMachineArn: sm.ARN, Name: "p-1", Input: `{"Seats":3}`})
	if err != nil {
		fmt.Println(err)
		return
	}
	done, err := svc.WaitForCompletion(ctx, x.ARN)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(done.Status, done.Output)
	fmt.Println("virtual time:", done.StopDate.Sub(done.StartDate))
	history, _ := svc.GetExecutionHistory(ctx, x.ARN)
	for _, ev := range history {
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%d %s %s", ev.ID, ev.Type, ev.Details.Name+ev.Details.Error)))
	}
	// Output:
	// SUCCEEDED {"Seats":3,"error":{"Cause":"only 2 left","Error":"NoSeats"}}
	// virtual time: 1h0m0s
	// 1 ExecutionStarted
	// 2 TaskStateEntered Reserve
	// 3 TaskScheduled
	// 4 TaskStarted
	// 5 TaskFailed NoSeats
	// 6 TaskStateExited Reserve
	// 7 WaitStateEntered Later
	// 8 WaitStateExited Later
	// 9 SucceedStateEntered Done
	// 10 SucceedStateExited Done
	// 11 ExecutionSucceeded
}
