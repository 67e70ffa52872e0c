// Command record is a test function that appends one line per invocation to
// the file named in the event, then fails if asked to. Tests count the lines
// to see how often an asynchronous invocation was attempted.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type request struct {
	File string `json:"file"`
	Fail bool   `json:"fail"`
}

func main() {
	lambda.Start(func(ctx context.Context, req request) (string, error) {
		lc, _ := lambdacontext.FromContext(ctx)
		f, err := os.OpenFile(req.File, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", fmt.Errorf("open record file: %w", err)
		}
		defer f.Close()
		if _, err := fmt.Fprintln(f, lc.AwsRequestID); err != nil {
			return "", fmt.Errorf("append record: %w", err)
		}
		if req.Fail {
			return "", errors.New("asked to fail")
		}
		return "recorded", nil
	})
}
