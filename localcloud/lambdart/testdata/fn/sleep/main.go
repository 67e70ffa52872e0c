// Command sleep is a test function that sleeps for the requested number of
// milliseconds (ignoring its deadline, like a handler stuck in a call) and
// then answers {"pid": <pid>}. With IGNORE_SIGTERM set it ignores SIGTERM,
// so only SIGKILL stops it.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

type request struct {
	MS int `json:"ms"`
}

type response struct {
	PID int `json:"pid"`
}

func main() {
	if os.Getenv("IGNORE_SIGTERM") != "" {
		signal.Ignore(syscall.SIGTERM)
	}
	lambda.Start(func(_ context.Context, req request) (response, error) {
		time.Sleep(time.Duration(req.MS) * time.Millisecond)
		return response{PID: os.Getpid()}, nil
	})
}
