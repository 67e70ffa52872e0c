// Command stepper is a parity-test Step Functions task: it fails with a named
// error type when asked to, so a state machine can catch it by that name.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/lambda"
)

// SeatTaken is a named failure; Lambda reports its type name as errorType.
type SeatTaken struct{ Seat string }

func (e SeatTaken) Error() string { return "seat " + e.Seat + " is taken" }

type input struct {
	Seat string `json:"seat"`
	Fail bool   `json:"fail"`
}

func main() {
	lambda.Start(func(ctx context.Context, in input) (map[string]string, error) {
		if in.Fail {
			return nil, SeatTaken{Seat: in.Seat}
		}
		return map[string]string{"held": in.Seat}, nil
	})
}
