// Command spawn is a test function that starts a child process (itself, in
// "child" mode, which sleeps for an hour) on every invocation and answers
// {"pid": <own pid>, "childPid": <child pid>}. Tests use it to prove that
// stopping the runtime also kills what a function left running.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

type response struct {
	PID      int `json:"pid"`
	ChildPID int `json:"childPid"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		time.Sleep(time.Hour)
		return
	}
	lambda.Start(func(context.Context) (response, error) {
		self, err := os.Executable()
		if err != nil {
			return response{}, fmt.Errorf("find own executable: %w", err)
		}
		child := exec.Command(self, "child")
		if err := child.Start(); err != nil {
			return response{}, fmt.Errorf("start child: %w", err)
		}
		return response{PID: os.Getpid(), ChildPID: child.Process.Pid}, nil
	})
}
