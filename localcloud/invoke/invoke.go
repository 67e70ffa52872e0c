// Package invoke is the seam between the local cloud's Lambda data plane and
// everything that calls functions: event source mappings, schedules, the HTTP
// API gateway and the Step Functions executor. It mirrors the Lambda Invoke API:
// a function error is not a Go error but a Result with FunctionError set, as in
// the X-Amz-Function-Error response header.
package invoke

import (
	"context"
	"encoding/json"
)

// Result is the outcome of one synchronous invocation.
type Result struct {
	// Payload is the function's response, or for a failed invocation the
	// error document {"errorMessage": "...", "errorType": "..."}.
	Payload []byte
	// FunctionError is "" on success and "Unhandled" when the function
	// returned an error, crashed or timed out (as in X-Amz-Function-Error).
	FunctionError string
}

// Failed reports whether the function itself failed.
func (r Result) Failed() bool { return r.FunctionError != "" }

// ErrorInfo is the error document a failed invocation returns.
type ErrorInfo struct {
	ErrorMessage string `json:"errorMessage"`
	ErrorType    string `json:"errorType,omitempty"`
}

// Error decodes the error document of a failed invocation. For a successful
// one it returns the zero value.
func (r Result) Error() ErrorInfo {
	var e ErrorInfo
	if !r.Failed() {
		return e
	}
	if err := json.Unmarshal(r.Payload, &e); err != nil {
		e.ErrorMessage = string(r.Payload)
	}
	return e
}

// Invoker runs a function synchronously (InvocationType RequestResponse).
// The error return is for infrastructure problems only (unknown function,
// cancelled context); a failing function yields a Result with FunctionError.
type Invoker interface {
	Invoke(ctx context.Context, function string, payload []byte) (Result, error)
}
