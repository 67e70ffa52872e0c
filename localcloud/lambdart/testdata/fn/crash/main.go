// Command crash is a test function that dies on demand. With "panic" it
// panics in the handler (aws-lambda-go reports the panic, then exits); with
// "goroutine-panic" it panics on another goroutine, which nothing can
// recover, so the process dies while holding the invocation; with "exit" it
// calls os.Exit(3). Any other mode answers {"pid": <pid>}. With
// CRASH_ON_START set it exits with status 4 before polling, like a function
// whose init fails.
package main

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

type request struct {
	Mode string `json:"mode"`
}

type response struct {
	PID int `json:"pid"`
}

func main() {
	if os.Getenv("CRASH_ON_START") != "" {
		os.Exit(4)
	}
	lambda.Start(func(_ context.Context, req request) (response, error) {
		switch req.Mode {
		case "panic":
			panic("boom")
		case "goroutine-panic":
			go func() { panic("boom in a goroutine") }()
			time.Sleep(time.Minute)
		case "exit":
			os.Exit(3)
		}
		return response{PID: os.Getpid()}, nil
	})
}
