package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/localcloud/sfn"
	"github.com/clubdev/club/localcloud/sfn/sfntest"
)

// fixture is an executor on a virtual clock that skips idle time, served
// over HTTP, and an AWS SDK client pointed at it (package sfntest).
type fixture struct {
	url    string
	client *awssfn.Client
	tokens chan string
}

func setup(t *testing.T) *fixture {
	t.Helper()
	e := sfntest.New(t, sfntest.Options{})
	f := &fixture{url: e.URL(), client: e.Client(), tokens: make(chan string, 10)}
	// A callback resource whose handler only hands out the token.
	e.Handle("arn:aws:states:::sqs:sendMessage.waitForTaskToken", sfn.TaskFunc(func(_ context.Context, req sfn.TaskRequest) (json.RawMessage, error) {
		f.tokens <- req.TaskToken
		return json.RawMessage(`{"MessageId":"m-1"}`), nil
	}))
	return f
}

const callbackDefinition = `{
  "Comment": "waits for a callback, then waits an hour",
  "StartAt": "Hold",
  "States": {
    "Hold": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
             "Parameters": {"QueueUrl": "q", "MessageBody.$": "$$.Task.Token"}, "ResultPath": "$.paid", "Next": "Later"},
    "Later": {"Type": "Wait", "Seconds": 3600, "End": true}
  }
}`

func (f *fixture) token(t *testing.T) string {
	t.Helper()
	select {
	case tok := <-f.tokens:
		return tok
	case <-time.After(patience.Wait()):
		t.Fatal("no task token")
		return ""
	}
}

func (f *fixture) waitStatus(t *testing.T, arn string) *awssfn.DescribeExecutionOutput {
	t.Helper()
	var out *awssfn.DescribeExecutionOutput
	require.Eventually(t, func() bool {
		var err error
		out, err = f.client.DescribeExecution(context.Background(), &awssfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
		require.NoError(t, err)
		return out.Status != types.ExecutionStatusRunning
	}, patience.Wait(), time.Millisecond)
	return out
}

func TestSDKRoundTrip(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	c := f.client
	created, err := c.CreateStateMachine(ctx, &awssfn.CreateStateMachineInput{
		Name: aws.String("purchase"), Definition: aws.String(callbackDefinition),
		RoleArn: aws.String("arn:aws:iam::000000000000:role/sfn"),
		Tags:    []types.Tag{{Key: aws.String("team"), Value: aws.String("club")}},
	})
	require.NoError(t, err)
	require.Equal(t, "arn:aws:states:us-east-1:000000000000:stateMachine:purchase", aws.ToString(created.StateMachineArn))
	require.False(t, aws.ToTime(created.CreationDate).IsZero())

	desc, err := c.DescribeStateMachine(ctx, &awssfn.DescribeStateMachineInput{StateMachineArn: created.StateMachineArn})
	require.NoError(t, err)
	require.Equal(t, callbackDefinition, aws.ToString(desc.Definition))
	require.Equal(t, types.StateMachineStatusActive, desc.Status)
	require.Equal(t, types.StateMachineTypeStandard, desc.Type)

	started, err := c.StartExecution(ctx, &awssfn.StartExecutionInput{
		StateMachineArn: created.StateMachineArn, Name: aws.String("p-1"), Input: aws.String(`{"purchase":"p-1"}`)})
	require.NoError(t, err)
	again, err := c.StartExecution(ctx, &awssfn.StartExecutionInput{
		StateMachineArn: created.StateMachineArn, Name: aws.String("p-1"), Input: aws.String(`{"purchase":"p-1"}`)})
	require.NoError(t, err)
	require.Equal(t, aws.ToString(started.ExecutionArn), aws.ToString(again.ExecutionArn))
	_, err = c.StartExecution(ctx, &awssfn.StartExecutionInput{
		StateMachineArn: created.StateMachineArn, Name: aws.String("p-1"), Input: aws.String(`{"purchase":"other"}`)})
	var exists *types.ExecutionAlreadyExists
	require.ErrorAs(t, err, &exists)

	_, err = c.SendTaskSuccess(ctx, &awssfn.SendTaskSuccessInput{TaskToken: aws.String(f.token(t)), Output: aws.String(`{"ok":true}`)})
	require.NoError(t, err)
	done := f.waitStatus(t, aws.ToString(started.ExecutionArn))
	require.Equal(t, types.ExecutionStatusSucceeded, done.Status)
	require.JSONEq(t, `{"purchase":"p-1","paid":{"ok":true}}`, aws.ToString(done.Output))
	require.Equal(t, time.Hour, aws.ToTime(done.StopDate).Sub(aws.ToTime(done.StartDate)))

	// The paginator walks the whole history in pages of two.
	var seen []types.HistoryEventType
	p := awssfn.NewGetExecutionHistoryPaginator(c, &awssfn.GetExecutionHistoryInput{ExecutionArn: started.ExecutionArn, MaxResults: 2})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Events), 2)
		for _, ev := range page.Events {
			seen = append(seen, ev.Type)
			if ev.Type == types.HistoryEventTypeTaskScheduled {
				require.Equal(t, "sqs", aws.ToString(ev.TaskScheduledEventDetails.ResourceType))
				require.Equal(t, "sendMessage.waitForTaskToken", aws.ToString(ev.TaskScheduledEventDetails.Resource))
				require.Equal(t, "us-east-1", aws.ToString(ev.TaskScheduledEventDetails.Region))
				require.Contains(t, aws.ToString(ev.TaskScheduledEventDetails.Parameters), `"QueueUrl":"q"`)
			}
			if ev.Type == types.HistoryEventTypeTaskStateEntered {
				require.Equal(t, "Hold", aws.ToString(ev.StateEnteredEventDetails.Name))
				require.JSONEq(t, `{"purchase":"p-1"}`, aws.ToString(ev.StateEnteredEventDetails.Input))
			}
		}
	}
	require.Equal(t, []types.HistoryEventType{"ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskStarted",
		"TaskSubmitted", "TaskSucceeded", "TaskStateExited", "WaitStateEntered", "WaitStateExited", "ExecutionSucceeded"}, seen)

	list, err := c.ListExecutions(ctx, &awssfn.ListExecutionsInput{StateMachineArn: created.StateMachineArn, StatusFilter: types.ExecutionStatusSucceeded})
	require.NoError(t, err)
	require.Len(t, list.Executions, 1)
	tags, err := c.ListTagsForResource(ctx, &awssfn.ListTagsForResourceInput{ResourceArn: created.StateMachineArn})
	require.NoError(t, err)
	require.Equal(t, "club", aws.ToString(tags.Tags[0].Value))
}

func TestSDKErrors(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	c := f.client
	_, err := c.CreateStateMachine(ctx, &awssfn.CreateStateMachineInput{
		Name: aws.String("bad"), RoleArn: aws.String("arn:aws:iam::000000000000:role/sfn"),
		Definition: aws.String(`{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Pass","Output":"{% 1 %}","End":true}}}`),
	})
	var invalid *types.InvalidDefinition
	require.ErrorAs(t, err, &invalid)
	require.Contains(t, invalid.ErrorMessage(), `QueryLanguage "JSONata" is not supported`)
	require.Contains(t, invalid.ErrorMessage(), "/States/A/Output")

	_, err = c.DescribeExecution(ctx, &awssfn.DescribeExecutionInput{ExecutionArn: aws.String("arn:aws:states:us-east-1:000000000000:execution:none:x")})
	var missing *types.ExecutionDoesNotExist
	require.ErrorAs(t, err, &missing)
	_, err = c.SendTaskSuccess(ctx, &awssfn.SendTaskSuccessInput{TaskToken: aws.String("nope"), Output: aws.String("{}")})
	var badToken *types.InvalidToken
	require.ErrorAs(t, err, &badToken)
	_, err = c.StartExecution(ctx, &awssfn.StartExecutionInput{StateMachineArn: aws.String("arn:aws:states:us-east-1:000000000000:stateMachine:none")})
	var noMachine *types.StateMachineDoesNotExist
	require.ErrorAs(t, err, &noMachine)

	v, err := c.ValidateStateMachineDefinition(ctx, &awssfn.ValidateStateMachineDefinitionInput{
		Definition: aws.String(`{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"}}}`)})
	require.NoError(t, err)
	require.Equal(t, types.ValidateStateMachineDefinitionResultCodeFail, v.Result)
	// As on AWS: the dangling target, then the machine's missing terminal
	// state, which has no location.
	require.Len(t, v.Diagnostics, 2)
	require.Equal(t, "MISSING_TRANSITION_TARGET", aws.ToString(v.Diagnostics[0].Code))
	require.Equal(t, "/States/A", aws.ToString(v.Diagnostics[0].Location))
	require.Equal(t, "MISSING_END_STATE", aws.ToString(v.Diagnostics[1].Code))
	require.Equal(t, "Workflow has no terminal state", aws.ToString(v.Diagnostics[1].Message))
	require.Nil(t, v.Diagnostics[1].Location)
}

func TestUnknownOperationAndMethod(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, tc := range []struct {
		method, target string
		status         int
		code           string
	}{
		{http.MethodPost, "AWSStepFunctions.NoSuchOperation", http.StatusBadRequest, "UnknownOperationException"},
		{http.MethodPost, "AWSStepFunctions.CreateActivity", http.StatusBadRequest, "UnsupportedOperation"},
		{http.MethodPost, "DynamoDB_20120810.GetItem", http.StatusBadRequest, "UnknownOperationException"},
		{http.MethodGet, "AWSStepFunctions.ListStateMachines", http.StatusMethodNotAllowed, "InvalidAction"},
		{http.MethodPost, "AWSStepFunctions.StartSyncExecution", http.StatusBadRequest, "StateMachineTypeNotSupported"},
		{http.MethodPost, "AWSStepFunctions.DescribeExecution", http.StatusBadRequest, "ValidationException"},
	} {
		req, err := http.NewRequest(tc.method, f.url, strings.NewReader(`{}`))
		require.NoError(t, err)
		req.Header.Set("X-Amz-Target", tc.target)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var body struct {
			Type    string `json:"__type"`
			Message string `json:"message"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		resp.Body.Close()
		require.Equal(t, tc.status, resp.StatusCode, tc.target)
		require.Equal(t, tc.code, body.Type, tc.target)
		require.NotEmpty(t, body.Message)
	}
}

func TestSDKLifecycleOperations(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	c := f.client
	created, err := c.CreateStateMachine(ctx, &awssfn.CreateStateMachineInput{
		Name: aws.String("ops"), Definition: aws.String(callbackDefinition), RoleArn: aws.String("arn:aws:iam::000000000000:role/a")})
	require.NoError(t, err)
	arn := created.StateMachineArn

	// A heartbeat, then a failure: the execution fails with the sent error.
	failing, err := c.StartExecution(ctx, &awssfn.StartExecutionInput{StateMachineArn: arn, Name: aws.String("f")})
	require.NoError(t, err)
	tok := f.token(t)
	_, err = c.SendTaskHeartbeat(ctx, &awssfn.SendTaskHeartbeatInput{TaskToken: aws.String(tok)})
	require.NoError(t, err)
	_, err = c.SendTaskFailure(ctx, &awssfn.SendTaskFailureInput{TaskToken: aws.String(tok), Error: aws.String("Declined"), Cause: aws.String("no funds")})
	require.NoError(t, err)
	failed := f.waitStatus(t, aws.ToString(failing.ExecutionArn))
	require.Equal(t, types.ExecutionStatusFailed, failed.Status)
	require.Equal(t, "Declined", aws.ToString(failed.Error))
	require.Equal(t, "no funds", aws.ToString(failed.Cause))

	// Stop a running execution.
	running, err := c.StartExecution(ctx, &awssfn.StartExecutionInput{StateMachineArn: arn, Name: aws.String("s")})
	require.NoError(t, err)
	f.token(t)
	stopped, err := c.StopExecution(ctx, &awssfn.StopExecutionInput{ExecutionArn: running.ExecutionArn, Error: aws.String("Ops"), Cause: aws.String("manual")})
	require.NoError(t, err)
	require.False(t, aws.ToTime(stopped.StopDate).IsZero())
	desc, err := c.DescribeExecution(ctx, &awssfn.DescribeExecutionInput{ExecutionArn: running.ExecutionArn})
	require.NoError(t, err)
	require.Equal(t, types.ExecutionStatusAborted, desc.Status)

	// Update, and read which definition an old execution ran.
	v2 := `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`
	updated, err := c.UpdateStateMachine(ctx, &awssfn.UpdateStateMachineInput{StateMachineArn: arn, Definition: aws.String(v2)})
	require.NoError(t, err)
	require.NotEmpty(t, aws.ToString(updated.RevisionId))
	forExec, err := c.DescribeStateMachineForExecution(ctx, &awssfn.DescribeStateMachineForExecutionInput{ExecutionArn: running.ExecutionArn})
	require.NoError(t, err)
	require.Equal(t, callbackDefinition, aws.ToString(forExec.Definition))
	_, err = c.UpdateStateMachine(ctx, &awssfn.UpdateStateMachineInput{StateMachineArn: arn})
	var missing *types.MissingRequiredParameter
	require.ErrorAs(t, err, &missing)

	// Tags.
	_, err = c.TagResource(ctx, &awssfn.TagResourceInput{ResourceArn: arn, Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}})
	require.NoError(t, err)
	_, err = c.UntagResource(ctx, &awssfn.UntagResourceInput{ResourceArn: arn, TagKeys: []string{"k"}})
	require.NoError(t, err)
	tags, err := c.ListTagsForResource(ctx, &awssfn.ListTagsForResourceInput{ResourceArn: arn})
	require.NoError(t, err)
	require.Empty(t, tags.Tags)

	// Paging through ListStateMachines, then delete.
	for _, name := range []string{"ops2", "ops3"} {
		_, err := c.CreateStateMachine(ctx, &awssfn.CreateStateMachineInput{Name: aws.String(name), Definition: aws.String(v2), RoleArn: aws.String("r")})
		require.NoError(t, err)
	}
	var names []string
	p := awssfn.NewListStateMachinesPaginator(c, &awssfn.ListStateMachinesInput{MaxResults: 2})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		require.NoError(t, err)
		for _, sm := range page.StateMachines {
			names = append(names, aws.ToString(sm.Name))
		}
	}
	require.Equal(t, []string{"ops", "ops2", "ops3"}, names)
	_, err = c.DeleteStateMachine(ctx, &awssfn.DeleteStateMachineInput{StateMachineArn: arn})
	require.NoError(t, err)
	_, err = c.DescribeStateMachine(ctx, &awssfn.DescribeStateMachineInput{StateMachineArn: arn})
	var gone *types.StateMachineDoesNotExist
	require.ErrorAs(t, err, &gone)
}
