// Command fail is a test function that always returns an error: a custom
// error type by default, or a plain errors.New error when asked to.
package main

import (
	"context"
	"errors"

	"github.com/aws/aws-lambda-go/lambda"
)

// PaymentDeclined is a named error type; aws-lambda-go reports its name as
// the errorType, which Step Functions Retry/Catch match on.
type PaymentDeclined struct{ Reason string }

func (e *PaymentDeclined) Error() string { return "payment declined: " + e.Reason }

type request struct {
	Plain bool `json:"plain"`
}

func main() {
	lambda.Start(func(_ context.Context, req request) (string, error) {
		if req.Plain {
			return "", errors.New("plain failure")
		}
		return "", &PaymentDeclined{Reason: "insufficient funds"}
	})
}
