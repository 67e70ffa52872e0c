// Package sfnclient adapts the AWS Step Functions API (aws-sdk-go-v2
// service/sfn) to the ports of the purchase domain: starting the purchase
// state machine's executions (purchase.Executions) and completing a waiting
// task (purchase.TaskCallbacks).
//
// Both are made safe to repeat, which is what callers that may run twice (a
// retried webhook, a re-delivered outbox row) need:
//
//   - StartExecution treats ExecutionAlreadyExists as success: the name
//     identifies the execution, so a second start of the same name is the
//     same start. (AWS also answers so when the same name ran with another
//     input, or has closed; either way an execution of that name exists and
//     owns the purchase.)
//   - SendTaskSuccess and SendTaskFailure report a token whose task has
//     ended (TaskTimedOut, InvalidToken, TaskDoesNotExist) as
//     purchase.ErrTaskClosed, which callers treat as "the saga moved on".
//
// Every other error is returned wrapped, for the caller to retry. A Client
// is safe for concurrent use.
package sfnclient

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/clubdev/club/internal/club/purchase"
)

// API is the part of *sfn.Client the adapter uses.
type API interface {
	StartExecution(ctx context.Context, in *sfn.StartExecutionInput, opts ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
	SendTaskSuccess(ctx context.Context, in *sfn.SendTaskSuccessInput, opts ...func(*sfn.Options)) (*sfn.SendTaskSuccessOutput, error)
	SendTaskFailure(ctx context.Context, in *sfn.SendTaskFailureInput, opts ...func(*sfn.Options)) (*sfn.SendTaskFailureOutput, error)
}

// Client starts executions of one state machine and completes its tasks.
type Client struct {
	api             API
	stateMachineARN string
}

var _ purchase.TaskCallbacks = (*Client)(nil)

// New returns a Client for the state machine stateMachineARN; the ARN may
// be empty for a client that only sends task callbacks.
func New(api API, stateMachineARN string) (*Client, error) {
	if api == nil {
		return nil, errors.New("sfnclient: nil API")
	}
	return &Client{api: api, stateMachineARN: stateMachineARN}, nil
}

// StartExecution starts an execution named name with input (JSON); an
// execution of that name that already exists is success.
func (c *Client) StartExecution(ctx context.Context, name, input string) error {
	if c.stateMachineARN == "" {
		return fmt.Errorf("start execution %s: the client has no state machine ARN", name)
	}
	_, err := c.api.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(c.stateMachineARN), Name: aws.String(name), Input: aws.String(input),
	})
	if _, exists := errors.AsType[*types.ExecutionAlreadyExists](err); exists {
		return nil
	}
	if err != nil {
		return fmt.Errorf("start execution %s: %w", name, err)
	}
	return nil
}

// SendTaskSuccess completes the task of token with output (JSON).
func (c *Client) SendTaskSuccess(ctx context.Context, token, output string) error {
	_, err := c.api.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(output)})
	return callbackError("send task success", err)
}

// SendTaskFailure fails the task of token with errorName, which the state
// machine's Catch matches, and cause.
func (c *Client) SendTaskFailure(ctx context.Context, token, errorName, cause string) error {
	_, err := c.api.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{
		TaskToken: aws.String(token), Error: aws.String(errorName), Cause: aws.String(cause),
	})
	return callbackError("send task failure", err)
}

func callbackError(op string, err error) error {
	if err == nil {
		return nil
	}
	_, timedOut := errors.AsType[*types.TaskTimedOut](err)
	_, invalid := errors.AsType[*types.InvalidToken](err)
	_, missing := errors.AsType[*types.TaskDoesNotExist](err)
	if timedOut || invalid || missing {
		return fmt.Errorf("%s: %w: %w", op, purchase.ErrTaskClosed, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}
