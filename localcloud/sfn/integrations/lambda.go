package integrations

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/google/uuid"

	"github.com/clubdev/club/localcloud/invoke"
	"github.com/clubdev/club/localcloud/sfn"
)

// Resources of the Lambda integration.
const (
	LambdaInvoke         = "arn:aws:states:::lambda:invoke"
	LambdaInvokeCallback = LambdaInvoke + sfn.CallbackSuffix
	LambdaARNPrefix      = "arn:aws:lambda:"
)

// Lambda runs Lambda tasks through an invoke.Invoker.
type Lambda struct {
	invoker invoke.Invoker
}

var (
	_ sfn.TaskHandler      = (*Lambda)(nil)
	_ sfn.ParameterChecker = (*Lambda)(nil)
)

// NewLambda returns the Lambda integration.
func NewLambda(inv invoke.Invoker) *Lambda { return &Lambda{invoker: inv} }

// Register adds lambda:invoke, its callback form and bare function ARNs.
func (l *Lambda) Register(r *sfn.Resources) {
	r.Handle(LambdaInvoke, l)
	r.Handle(LambdaInvokeCallback, l)
	r.HandlePrefix(LambdaARNPrefix, l)
}

var invokeFields = []string{"FunctionName", "Payload", "Qualifier", "InvocationType", "ClientContext", "LogType"}

// CheckParameters validates the Invoke request of lambda:invoke.
func (l *Lambda) CheckParameters(resource string, fields []string) error {
	if strings.HasPrefix(resource, LambdaARNPrefix) {
		return nil // the Parameters are the payload
	}
	return checkFields(resource, fields, invokeFields, []string{"FunctionName"})
}

type invokeRequest struct {
	FunctionName   string          `json:"FunctionName"`
	Payload        json.RawMessage `json:"Payload"`
	Qualifier      string          `json:"Qualifier"`
	InvocationType string          `json:"InvocationType"`
	ClientContext  string          `json:"ClientContext"`
	LogType        string          `json:"LogType"`
}

// RunTask invokes the function.
func (l *Lambda) RunTask(ctx context.Context, req sfn.TaskRequest) (json.RawMessage, error) {
	if strings.HasPrefix(req.Resource, LambdaARNPrefix) {
		res, err := l.invoke(ctx, functionName(req.Resource), req.Input)
		if err != nil {
			return nil, err
		}
		return payloadJSON(res.Payload), nil
	}
	var in invokeRequest
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return nil, runtimeError("cannot decode the Lambda Invoke parameters: %v", err)
	}
	if in.FunctionName == "" {
		return nil, runtimeError("the Lambda Invoke parameters need a FunctionName")
	}
	payload := in.Payload
	if len(payload) == 0 {
		payload = json.RawMessage(`{}`)
	}
	name := functionName(in.FunctionName)
	status := 200
	var out json.RawMessage
	switch in.InvocationType {
	case "", "RequestResponse":
		res, err := l.invoke(ctx, name, payload)
		if err != nil {
			return nil, err
		}
		out = payloadJSON(res.Payload)
	case "Event":
		// Fire and forget, as Lambda queues an asynchronous invocation.
		go func() { _, _ = l.invoker.Invoke(context.WithoutCancel(ctx), name, payload) }()
		status, out = 202, json.RawMessage(`""`)
	case "DryRun":
		status, out = 204, json.RawMessage(`""`)
	default:
		return nil, &sfn.TaskError{Name: "Lambda.InvalidParameterValueException", Cause: "unknown InvocationType " + in.InvocationType}
	}
	reqID := uuid.NewString()
	return marshal(map[string]any{
		"ExecutedVersion": "$LATEST",
		"Payload":         out,
		"SdkHttpMetadata": map[string]any{
			"AllHttpHeaders": map[string]any{"X-Amz-Executed-Version": []string{"$LATEST"}, "x-amzn-RequestId": []string{reqID}},
			"HttpHeaders":    map[string]any{"X-Amz-Executed-Version": "$LATEST", "x-amzn-RequestId": reqID},
			"HttpStatusCode": status,
		},
		"SdkResponseMetadata": map[string]any{"RequestId": reqID},
		"StatusCode":          status,
	})
}

// invoke calls the function and turns a function error into a task error.
func (l *Lambda) invoke(ctx context.Context, name string, payload json.RawMessage) (invoke.Result, error) {
	res, err := l.invoker.Invoke(ctx, name, payload)
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			// The invocation outlived its client's deadline, not the task's.
			return res, &sfn.TaskError{Name: "Lambda.ClientExecutionTimeoutException", Cause: err.Error()}
		}
		return res, &sfn.TaskError{Name: "Lambda.ServiceException", Cause: err.Error()}
	}
	if res.Failed() {
		return res, FunctionError(res)
	}
	return res, nil
}

// FunctionError is the task error of a failed invocation: named after the
// error document's errorType (Lambda.Unknown without one), with the whole
// document as the cause.
func FunctionError(res invoke.Result) error {
	name := res.Error().ErrorType
	if name == "" {
		name = "Lambda.Unknown"
	}
	cause := string(res.Payload)
	if !json.Valid(res.Payload) {
		b, _ := json.Marshal(invoke.ErrorInfo{ErrorMessage: cause})
		cause = string(b)
	}
	return &sfn.TaskError{Name: name, Cause: cause}
}

// payloadJSON returns a function's response as JSON: as is when it is JSON,
// as a JSON string otherwise, and null when empty.
func payloadJSON(p []byte) json.RawMessage {
	switch {
	case len(p) == 0:
		return json.RawMessage(`null`)
	case json.Valid(p):
		return json.RawMessage(p)
	}
	b, _ := json.Marshal(string(p))
	return b
}

// functionName extracts the function name from a name, a partial ARN
// ("123456789012:function:name") or a full ARN, dropping any version or
// alias qualifier.
func functionName(s string) string {
	if i := strings.Index(s, "function:"); i >= 0 {
		s = s[i+len("function:"):]
	}
	name, _, _ := strings.Cut(s, ":")
	return name
}
