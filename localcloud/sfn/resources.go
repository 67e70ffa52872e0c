package sfn

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
)

// CallbackSuffix marks a Task resource that waits for SendTaskSuccess or
// SendTaskFailure with the task token after its handler has returned.
const CallbackSuffix = ".waitForTaskToken"

// TaskRequest is what a Task state asks of its resource.
type TaskRequest struct {
	// Resource is the Resource field as written in the definition, e.g.
	// "arn:aws:states:::sqs:sendMessage.waitForTaskToken".
	Resource string
	// Input is the task's effective input: the state input after InputPath
	// and Parameters. For a service integration it is the API request.
	Input json.RawMessage
	// TaskToken is set for .waitForTaskToken resources; it is also in the
	// context object as $$.Task.Token.
	TaskToken string
	// Execution is the execution ARN and State the state's name.
	Execution string
	State     string
	// RetryCount is the number of retries before this attempt.
	RetryCount int
}

// TaskHandler runs the resource of a Task state. A returned *TaskError
// fails the task with its name, which Retry and Catch match; any other
// error fails it as States.TaskFailed. The context is cancelled when the
// task times out or the execution stops; the handler should then return.
// Handlers are called concurrently.
type TaskHandler interface {
	RunTask(ctx context.Context, req TaskRequest) (json.RawMessage, error)
}

// TaskFunc adapts a function to TaskHandler.
type TaskFunc func(ctx context.Context, req TaskRequest) (json.RawMessage, error)

// RunTask calls f.
func (f TaskFunc) RunTask(ctx context.Context, req TaskRequest) (json.RawMessage, error) {
	return f(ctx, req)
}

// TaskError fails a task with an ASL error name and cause.
type TaskError struct {
	Name  string
	Cause string
}

func (e *TaskError) Error() string {
	if e.Cause == "" {
		return e.Name
	}
	return e.Name + ": " + e.Cause
}

// ParameterChecker is implemented by handlers that know the request shape
// of their resource; the executor calls it when a state machine is created
// or updated with the top-level field names of the state's Parameters, so a
// misspelt field is rejected as InvalidDefinition instead of ignored.
type ParameterChecker interface {
	CheckParameters(resource string, fields []string) error
}

// Resources maps Task resource ARNs to handlers. It is safe for concurrent
// use; handlers may be registered while executions run.
type Resources struct {
	mu       sync.RWMutex
	exact    map[string]TaskHandler
	prefixes []prefixHandler
}

type prefixHandler struct {
	prefix  string
	handler TaskHandler
}

// NewResources returns an empty registry.
func NewResources() *Resources { return &Resources{exact: map[string]TaskHandler{}} }

// Handle registers h for exactly this resource. Register the callback form
// ("...sendMessage.waitForTaskToken") separately from the plain one: a
// resource without a handler is rejected at CreateStateMachine.
func (r *Resources) Handle(resource string, h TaskHandler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exact[resource] = h
}

// HandlePrefix registers h for every resource starting with prefix that
// has no exact registration, e.g. "arn:aws:lambda:" for Lambda function
// ARNs. The longest matching prefix wins.
func (r *Resources) HandlePrefix(prefix string, h TaskHandler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prefixes = append(r.prefixes, prefixHandler{prefix, h})
}

// Lookup returns the handler of a resource.
func (r *Resources) Lookup(resource string) (TaskHandler, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if h, ok := r.exact[resource]; ok {
		return h, true
	}
	var best *prefixHandler
	for i := range r.prefixes {
		p := &r.prefixes[i]
		if strings.HasPrefix(resource, p.prefix) && (best == nil || len(p.prefix) > len(best.prefix)) {
			best = p
		}
	}
	if best == nil {
		return nil, false
	}
	return best.handler, true
}

// isLambdaARN reports whether a resource is a bare Lambda function ARN,
// whose history events are LambdaFunction* rather than Task*.
func isLambdaARN(resource string) bool { return strings.HasPrefix(resource, "arn:aws:lambda:") }

// resourceParts splits a service integration ARN into the resourceType and
// resource of the Task* history events: "arn:aws:states:::sqs:sendMessage"
// gives ("sqs", "sendMessage").
func resourceParts(resource string) (typ, name string) {
	i := strings.Index(resource, ":::")
	if i < 0 {
		// An ARN with a region and account (an activity, a custom test
		// resource): the service is the type and the rest the resource.
		parts := strings.SplitN(resource, ":", 6)
		if len(parts) < 6 {
			return resource, ""
		}
		return parts[2], parts[5]
	}
	rest := resource[i+3:]
	typ, name, ok := strings.Cut(rest, ":")
	if !ok {
		return rest, ""
	}
	return typ, name
}

type activityKey struct{}

// Blocked runs wait while counting the calling task handler as idle, so
// that a virtual clock may advance meanwhile. A running handler otherwise
// keeps virtual time still (its work is assumed to take no virtual time);
// a handler that waits for something outside the executor, such as a fake
// of a function that hangs, wraps that wait in Blocked so that the task's
// TimeoutSeconds can expire. With the real clock Blocked just calls wait.
func Blocked(ctx context.Context, wait func()) {
	act, ok := ctx.Value(activityKey{}).(activity)
	if !ok {
		wait()
		return
	}
	act.Release()
	defer act.Hold()
	wait()
}
