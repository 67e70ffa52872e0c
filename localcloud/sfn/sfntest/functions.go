package sfntest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/clubdev/club/localcloud/invoke"
)

// Functions is an invoke.Invoker that runs aws-lambda-go handlers in the
// test process and answers as the Lambda Invoke API does for a function
// process: a returned error becomes {"errorMessage", "errorType"} with the
// Go type name as errorType (aws-lambda-go's rule), and a panic, which makes
// a real function process exit, becomes Runtime.ExitError. Give it to
// Options.Integrations.Invoker. It is safe for concurrent use.
type Functions struct {
	mu        sync.Mutex
	handlers  map[string]lambda.Handler
	calls     map[string]int
	intercept func(name string, payload []byte) (invoke.Result, error, bool)
}

// NewFunctions returns Functions without any function.
func NewFunctions() *Functions {
	return &Functions{handlers: map[string]lambda.Handler{}, calls: map[string]int{}}
}

// Add serves a function of that name with handler, any handler
// lambda.NewHandler accepts.
func (f *Functions) Add(name string, handler any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers[name] = lambda.NewHandler(handler)
}

// Calls returns how often a function was invoked.
func (f *Functions) Calls(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

// Intercept makes each invocation of a known function ask fn first: when
// fn answers ok, its result and error are the invocation's and the handler
// does not run (the Lambda platform failing an invocation: a killed
// process, a throttle, a client timeout).
func (f *Functions) Intercept(fn func(name string, payload []byte) (res invoke.Result, err error, ok bool)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.intercept = fn
}

// Invoke runs the function's handler on payload.
func (f *Functions) Invoke(ctx context.Context, name string, payload []byte) (res invoke.Result, err error) {
	f.mu.Lock()
	h, ok := f.handlers[name]
	f.calls[name]++
	intercept := f.intercept
	f.mu.Unlock()
	if !ok {
		return invoke.Result{}, fmt.Errorf("function %s: not found", name)
	}
	if intercept != nil {
		if res, err, ok := intercept(name, payload); ok {
			return res, err
		}
	}
	defer func() {
		if p := recover(); p != nil {
			res = Failure("Runtime.ExitError", fmt.Sprintf("RequestId: test Error: Runtime exited with error: exit status 2 (panic: %v)", p))
		}
	}()
	out, herr := h.Invoke(ctx, payload)
	if herr != nil {
		t := reflect.TypeOf(herr)
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		return Failure(t.Name(), herr.Error()), nil
	}
	return invoke.Result{Payload: out}, nil
}

// Failure is the result of a failed invocation: the error document Lambda
// returns, with FunctionError "Unhandled". An empty errorType is what Step
// Functions names Lambda.Unknown.
func Failure(errorType, msg string) invoke.Result {
	b, _ := json.Marshal(invoke.ErrorInfo{ErrorMessage: msg, ErrorType: errorType})
	return invoke.Result{Payload: b, FunctionError: "Unhandled"}
}
