package sfnclient_test

import (
	"context"
	"encoding/json"
	"testing"

	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/internal/sfnclient"
	"github.com/clubdev/club/localcloud/sfn"
	"github.com/clubdev/club/localcloud/sfn/sfntest"
)

const waitResource = "arn:aws:states:::test:wait.waitForTaskToken"

// setup serves the local Step Functions over HTTP to an SDK client, with a
// state machine whose one task waits for a callback and hands out its token.
func setup(t *testing.T) (*sfnclient.Client, *sfn.Service, chan string) {
	t.Helper()
	e := sfntest.New(t, sfntest.Options{Manual: true})
	tokens := make(chan string, 4)
	e.Handle(waitResource, sfn.TaskFunc(func(_ context.Context, req sfn.TaskRequest) (json.RawMessage, error) {
		tokens <- req.TaskToken
		return json.RawMessage(`{}`), nil
	}))
	machine := e.CreateStateMachine("purchase", `{
	  "StartAt": "Wait", "States": {"Wait": {"Type": "Task", "Resource": "`+waitResource+`",
	  "Catch": [{"ErrorEquals": ["PaymentFailed"], "Next": "Failed"}], "End": true},
	  "Failed": {"Type": "Succeed"}}}`)
	c, err := sfnclient.New(e.Client(), machine)
	require.NoError(t, err)
	return c, e.Service, tokens
}

func TestStartExecutionIsIdempotentByName(t *testing.T) {
	t.Parallel()
	c, svc, tokens := setup(t)
	ctx := context.Background()
	require.NoError(t, c.StartExecution(ctx, "p-1", `{"purchase_id":"p-1"}`))
	require.NoError(t, c.StartExecution(ctx, "p-1", `{"purchase_id":"p-1"}`), "same name and input while running")
	require.NoError(t, c.StartExecution(ctx, "p-1", `{"other":true}`), "an execution of that name exists")
	<-tokens
	sm := svc.ListStateMachines(ctx)[0]
	xs, err := svc.ListExecutions(ctx, sm.ARN, "")
	require.NoError(t, err)
	require.Len(t, xs, 1)
	require.Len(t, tokens, 0, "one task started")
}

func TestCallbacks(t *testing.T) {
	t.Parallel()
	c, svc, tokens := setup(t)
	ctx := context.Background()

	require.NoError(t, c.StartExecution(ctx, "p-1", `{}`))
	token := <-tokens
	require.NoError(t, c.SendTaskSuccess(ctx, token, `{"payment_status":"succeeded"}`))
	require.ErrorIs(t, c.SendTaskSuccess(ctx, token, `{}`), purchase.ErrTaskClosed, "a token is single-use")
	require.ErrorIs(t, c.SendTaskFailure(ctx, token, "PaymentFailed", "x"), purchase.ErrTaskClosed)
	require.ErrorIs(t, c.SendTaskSuccess(ctx, "no-such-token", `{}`), purchase.ErrTaskClosed)

	require.NoError(t, c.StartExecution(ctx, "p-2", `{}`))
	token = <-tokens
	require.NoError(t, c.SendTaskFailure(ctx, token, "PaymentFailed", "the provider said so"))

	sm := svc.ListStateMachines(ctx)[0]
	for _, name := range []string{"p-1", "p-2"} {
		wctx, cancel := context.WithTimeout(ctx, patience.Wait())
		x, err := svc.WaitForCompletion(wctx, sm.ARN[:len(sm.ARN)-len("stateMachine:purchase")]+"execution:purchase:"+name)
		cancel()
		require.NoError(t, err)
		require.Equal(t, sfn.StatusSucceeded, x.Status)
	}
}

func TestStartNeedsAStateMachine(t *testing.T) {
	t.Parallel()
	c, err := sfnclient.New(awssfn.New(awssfn.Options{Region: "us-east-1"}), "")
	require.NoError(t, err)
	require.Error(t, c.StartExecution(context.Background(), "p-1", `{}`))
	_, err = sfnclient.New(nil, "x")
	require.Error(t, err)
}
