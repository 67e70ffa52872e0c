// Command echo is a test function that returns its event unchanged and
// prints it as one line of its log.
package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(_ context.Context, event json.RawMessage) (json.RawMessage, error) {
		fmt.Printf("%s\n", event)
		return event, nil
	})
}
