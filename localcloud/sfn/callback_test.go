package sfn_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/localcloud/sfn"
)

const holdDefinition = `{
  "StartAt": "WaitForPayment",
  "States": {
    "WaitForPayment": {
      "Type": "Task",
      "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
      "Parameters": {"QueueUrl": "q", "MessageBody": {"purchase.$": "$.purchase", "token.$": "$$.Task.Token"}},
      "TimeoutSeconds": 900,
      "ResultPath": "$.payment",
      "Catch": [
        {"ErrorEquals": ["States.Timeout"], "ResultPath": "$.error", "Next": "Expired"},
        {"ErrorEquals": ["PaymentFailed"], "ResultPath": "$.error", "Next": "Declined"}
      ],
      "Next": "Confirmed"
    },
    "Confirmed": {"Type": "Pass", "Result": "confirmed", "ResultPath": "$.status", "End": true},
    "Declined": {"Type": "Pass", "Result": "declined", "ResultPath": "$.status", "End": true},
    "Expired": {"Type": "Pass", "Result": "expired", "ResultPath": "$.status", "End": true}
  }
}`

// token waits for the task token a callback task handed to its handler.
func token(t *testing.T, f *fakeTask) string {
	t.Helper()
	select {
	case tok := <-f.tokens:
		return tok
	case <-time.After(patience.Wait()):
		t.Fatal("no task token was handed out")
		return ""
	}
}

func TestCallbackSuccess(t *testing.T) {
	t.Parallel()
	e := manual(t)
	queue := newFake(fakeResponse{Output: json.RawMessage(`{"MessageId":"m-1"}`)})
	e.Resources.Handle("arn:aws:states:::sqs:sendMessage.waitForTaskToken", queue)
	arn := e.Start(e.CreateStateMachine("hold", holdDefinition), `{"purchase":"p-1"}`)

	tok := token(t, queue)
	var params struct {
		MessageBody struct {
			Purchase string `json:"purchase"`
			Token    string `json:"token"`
		}
	}
	require.NoError(t, json.Unmarshal(queue.requests[0].Input, &params))
	body := params.MessageBody
	require.Equal(t, "p-1", body.Purchase)
	require.Equal(t, tok, body.Token, "$$.Task.Token in Parameters is the token")

	e.Advance(10 * time.Minute) // within the 15-minute hold
	require.NoError(t, e.Service.SendTaskSuccess(context.Background(), tok, `{"paid":true}`))
	x := e.Wait(arn)
	require.Equal(t, sfn.StatusSucceeded, x.Status)
	require.JSONEq(t, `{"purchase":"p-1","payment":{"paid":true},"status":"confirmed"}`, x.Output)
	require.Equal(t, []string{"ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSubmitted",
		"TaskSucceeded", "TaskStateExited", "PassStateEntered", "PassStateExited", "ExecutionSucceeded"}, e.EventTypes(arn))

	err := e.Service.SendTaskSuccess(context.Background(), tok, `{}`)
	require.ErrorIs(t, err, sfn.ErrCode(sfn.CodeTaskTimedOut), "a closed task refuses a second callback")
}

func TestCallbackFailureIsCaughtByName(t *testing.T) {
	t.Parallel()
	e := manual(t) // with AutoAdvance the 15-minute timeout would win the race
	queue := newFake()
	e.Resources.Handle("arn:aws:states:::sqs:sendMessage.waitForTaskToken", queue)
	arn := e.Start(e.CreateStateMachine("hold", holdDefinition), `{"purchase":"p-2"}`)
	require.NoError(t, e.Service.SendTaskFailure(context.Background(), token(t, queue), "PaymentFailed", "card declined"))
	x := e.Wait(arn)
	require.Equal(t, sfn.StatusSucceeded, x.Status)
	require.JSONEq(t, `{"purchase":"p-2","error":{"Error":"PaymentFailed","Cause":"card declined"},"status":"declined"}`, x.Output)
}

// A 15-minute hold expires at once in virtual time, and a late callback is
// refused as AWS refuses it.
func TestFifteenMinuteHoldExpiresInstantly(t *testing.T) {
	t.Parallel()
	e := setup(t)
	queue := newFake()
	e.Resources.Handle("arn:aws:states:::sqs:sendMessage.waitForTaskToken", queue)
	arn := e.Start(e.CreateStateMachine("hold", holdDefinition), `{"purchase":"p-3"}`)
	x := e.Wait(arn) // waits far less than 15 real minutes: the clock is virtual
	require.Equal(t, sfn.StatusSucceeded, x.Status)
	require.JSONEq(t, `{"purchase":"p-3","error":{"Error":"States.Timeout"},"status":"expired"}`, x.Output)
	require.Equal(t, 15*time.Minute, x.StopDate.Sub(x.StartDate))
	require.Contains(t, e.EventTypes(arn), sfn.EventTaskTimedOut)

	err := e.Service.SendTaskSuccess(context.Background(), token(t, queue), `{}`)
	require.ErrorIs(t, err, sfn.ErrCode(sfn.CodeTaskTimedOut))
}

const heartbeatDefinition = `{
  "StartAt": "Work",
  "States": {
    "Work": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
      "Parameters": {"FunctionName": "worker", "Payload": {"token.$": "$$.Task.Token"}},
      "HeartbeatSeconds": 60,
      "TimeoutSeconds": 3600,
      "End": true
    }
  }
}`

// A callback task that never heartbeats fails after HeartbeatSeconds with
// States.Timeout, the name AWS reports for a missed heartbeat.
func TestHeartbeatlessCallbackTimesOut(t *testing.T) {
	t.Parallel()
	e := setup(t)
	worker := newFake()
	e.Resources.Handle("arn:aws:states:::lambda:invoke.waitForTaskToken", worker)
	arn := e.Start(e.CreateStateMachine("hb", heartbeatDefinition), `{}`)
	x := e.Wait(arn)
	require.Equal(t, sfn.StatusFailed, x.Status)
	require.Equal(t, "States.Timeout", x.Error)
	require.Equal(t, time.Minute, x.StopDate.Sub(x.StartDate))
	h, err := e.Service.GetExecutionHistory(context.Background(), arn)
	require.NoError(t, err)
	timedOut := h[len(h)-2]
	require.Equal(t, sfn.EventTaskTimedOut, timedOut.Type)
	require.Equal(t, "States.Timeout", timedOut.Details.Error)
	require.Equal(t, "lambda", timedOut.Details.ResourceType)
	require.Equal(t, "invoke.waitForTaskToken", timedOut.Details.Resource)
}

// Heartbeats keep a callback task alive past HeartbeatSeconds.
func TestHeartbeatsKeepTaskAlive(t *testing.T) {
	t.Parallel()
	e := manual(t)
	worker := newFake()
	e.Resources.Handle("arn:aws:states:::lambda:invoke.waitForTaskToken", worker)
	arn := e.Start(e.CreateStateMachine("hb", heartbeatDefinition), `{}`)
	tok := token(t, worker)
	ctx := context.Background()
	for range 5 {
		e.Advance(50 * time.Second)
		require.NoError(t, e.Service.SendTaskHeartbeat(ctx, tok))
	}
	x, err := e.Service.DescribeExecution(ctx, arn)
	require.NoError(t, err)
	require.Equal(t, sfn.StatusRunning, x.Status, "250 s with a heartbeat every 50 s")
	require.NoError(t, e.Service.SendTaskSuccess(ctx, tok, `"done"`))
	x = e.Wait(arn)
	require.Equal(t, sfn.StatusSucceeded, x.Status)
	require.Equal(t, `"done"`, x.Output)
}

// A handler may complete its own task before it returns, as a Lambda that
// calls SendTaskSuccess synchronously does.
func TestCallbackBeforeHandlerReturns(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.Resources.Handle("arn:aws:states:::lambda:invoke.waitForTaskToken", sfn.TaskFunc(func(ctx context.Context, req sfn.TaskRequest) (json.RawMessage, error) {
		if err := e.Service.SendTaskSuccess(ctx, req.TaskToken, `{"early":true}`); err != nil {
			return nil, err
		}
		return json.RawMessage(`{"StatusCode":200}`), nil
	}))
	x := e.Wait(e.Start(e.CreateStateMachine("early", heartbeatDefinition), `{}`))
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+" "+x.Cause)
	require.JSONEq(t, `{"early":true}`, x.Output)
}

func TestCallbackAPIErrors(t *testing.T) {
	t.Parallel()
	e := manual(t)
	worker := newFake()
	e.Resources.Handle("arn:aws:states:::lambda:invoke.waitForTaskToken", worker)
	e.Start(e.CreateStateMachine("hb", heartbeatDefinition), `{}`)
	tok := token(t, worker)
	ctx := context.Background()
	require.ErrorIs(t, e.Service.SendTaskSuccess(ctx, "not-a-token", `{}`), sfn.ErrCode(sfn.CodeInvalidToken))
	require.ErrorIs(t, e.Service.SendTaskHeartbeat(ctx, "not-a-token"), sfn.ErrCode(sfn.CodeInvalidToken))
	require.ErrorIs(t, e.Service.SendTaskSuccess(ctx, tok, `{not json`), sfn.ErrCode(sfn.CodeInvalidOutput))
}
