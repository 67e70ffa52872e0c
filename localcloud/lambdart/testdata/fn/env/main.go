// Command env is a test function that reports what the runtime gave it: the
// environment variables named in the event, the invocation's request id and
// function ARN, and the time left before its deadline.
package main

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type request struct {
	Vars []string `json:"vars"`
}

type response struct {
	Env                map[string]string `json:"env"`
	RequestID          string            `json:"requestId"`
	InvokedFunctionArn string            `json:"invokedFunctionArn"`
	RemainingMS        int64             `json:"remainingMs"`
	PID                int               `json:"pid"`
}

func main() {
	lambda.Start(func(ctx context.Context, req request) (response, error) {
		lc, ok := lambdacontext.FromContext(ctx)
		if !ok {
			return response{}, errors.New("no lambda context")
		}
		deadline, _ := ctx.Deadline()
		resp := response{
			Env:                map[string]string{},
			RequestID:          lc.AwsRequestID,
			InvokedFunctionArn: lc.InvokedFunctionArn,
			RemainingMS:        time.Until(deadline).Milliseconds(),
			PID:                os.Getpid(),
		}
		for _, name := range req.Vars {
			resp.Env[name] = os.Getenv(name)
		}
		return resp, nil
	})
}
