package lambdart

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/clubdev/club/localcloud/invoke"
)

// Invocation types of the Invoke API (X-Amz-Invocation-Type).
const (
	InvocationRequestResponse = "RequestResponse"
	InvocationEvent           = "Event"
	InvocationDryRun          = "DryRun"
)

// invokeAPIPath is the route of the Lambda Invoke REST API.
const invokeAPIPath = "/2015-03-31/functions/{function}/invocations"

// InvokeHandler serves the Lambda Invoke API, POST
// /2015-03-31/functions/{FunctionName}/invocations, as the AWS SDK calls it.
// FunctionName may be a name, a qualified name or an ARN; only $LATEST
// exists, so any qualifier runs it. By X-Amz-Invocation-Type:
//
//   - RequestResponse (default): 200 with the function's response, or its
//     error document and X-Amz-Function-Error: Unhandled; always
//     X-Amz-Executed-Version: $LATEST.
//   - Event: 202 at once; the invocation runs in the background with
//     Lambda's asynchronous retry policy (see InvokeAsync).
//   - DryRun: 204 if the function exists.
//
// Errors use Lambda's shape: an x-amzn-ErrorType header and a
// {"Type","message"} body (404 ResourceNotFoundException for an unknown
// function). X-Amz-Log-Type: Tail is accepted but no log tail is returned;
// read the function log instead.
func (r *Runtime) InvokeHandler() http.Handler { return r.invokeAPI }

func (r *Runtime) newInvokeAPI() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+invokeAPIPath, r.handleInvoke)
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		writeLambdaError(w, http.StatusNotFound, "UnknownOperationException", "User",
			"no Lambda operation "+req.Method+" "+req.URL.Path+" in the local data plane")
	})
	return mux
}

func (r *Runtime) handleInvoke(w http.ResponseWriter, req *http.Request) {
	name := functionName(req.PathValue("function"))
	if !r.hasFunction(name) {
		writeNotFound(w, name)
		return
	}
	payload, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxPayloadBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeLambdaError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException", "User",
				fmt.Sprintf("Request must be smaller than %d bytes for the InvokeFunction operation", maxPayloadBytes))
			return
		}
		writeLambdaError(w, http.StatusBadRequest, "InvalidRequestContentException", "User", "read payload: "+err.Error())
		return
	}

	requestID := newRequestID()
	w.Header().Set("X-Amzn-Requestid", requestID)
	switch invocationType := req.Header.Get("X-Amz-Invocation-Type"); invocationType {
	case InvocationDryRun:
		w.WriteHeader(http.StatusNoContent)

	case InvocationEvent:
		if err := r.invokeAsync(name, requestID, payload); err != nil {
			r.writeInvokeError(w, name, err)
			return
		}
		w.WriteHeader(http.StatusAccepted)

	case "", InvocationRequestResponse:
		res, err := r.invoke(req.Context(), name, requestID, payload)
		if err != nil {
			if req.Context().Err() != nil {
				return // the caller is gone; nobody reads an answer
			}
			r.writeInvokeError(w, name, err)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("X-Amz-Executed-Version", "$LATEST")
		if res.FunctionError != "" {
			h.Set("X-Amz-Function-Error", res.FunctionError)
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(res.Payload)

	default:
		writeLambdaError(w, http.StatusBadRequest, "InvalidParameterValueException", "User",
			fmt.Sprintf("Unsupported invocation type %q: use RequestResponse, Event or DryRun", invocationType))
	}
}

// InvokeAsync queues an asynchronous invocation (InvocationType Event) and
// returns its request id at once. A failed attempt (function error, crash
// or timeout) is retried after each of Options.AsyncRetryDelays, with the
// same request id, as Lambda does; an event that still fails is reported in
// the function log and dropped (no destinations or DLQ). Invocations share
// the function's processes with synchronous ones, in arrival order. Stop
// abandons pending retries.
func (r *Runtime) InvokeAsync(function string, payload []byte) (string, error) {
	requestID := newRequestID()
	if err := r.invokeAsync(functionName(function), requestID, payload); err != nil {
		return "", err
	}
	return requestID, nil
}

func (r *Runtime) invokeAsync(name, requestID string, payload []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn := r.functions[name]
	switch {
	case fn == nil:
		return fmt.Errorf("invoke %s: %w", name, ErrFunctionNotFound)
	case r.stopping:
		return fmt.Errorf("invoke %s: %w", name, ErrStopped)
	}
	r.wg.Add(1) // under mu, so never after Stop began waiting
	go func() {
		defer r.wg.Done()
		r.runAsync(fn, requestID, payload)
	}()
	return nil
}

func (r *Runtime) runAsync(fn *function, requestID string, payload []byte) {
	var last invoke.Result
	for attempt := 0; attempt <= len(r.retryDelays); attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(r.retryDelays[attempt-1]):
			case <-r.stopCtx.Done():
				return
			}
		}
		res, err := r.invoke(r.stopCtx, fn.cfg.Name, requestID, payload)
		if err != nil {
			return // stopping
		}
		if !res.Failed() {
			return
		}
		last = res
	}
	info := last.Error()
	fn.logs.system("[lambdart] async invocation %s failed after %d attempts (%s: %s); event dropped",
		requestID, len(r.retryDelays)+1, info.ErrorType, info.ErrorMessage)
}

func (r *Runtime) hasFunction(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.functions[name] != nil
}

func (r *Runtime) writeInvokeError(w http.ResponseWriter, name string, err error) {
	switch {
	case errors.Is(err, ErrFunctionNotFound):
		writeNotFound(w, name)
	case errors.Is(err, ErrStopped):
		writeLambdaError(w, http.StatusServiceUnavailable, "ServiceException", "Service", err.Error())
	default:
		writeLambdaError(w, http.StatusInternalServerError, "ServiceException", "Service", err.Error())
	}
}

func writeNotFound(w http.ResponseWriter, name string) {
	writeLambdaError(w, http.StatusNotFound, "ResourceNotFoundException", "User",
		"Function not found: "+functionARN(name))
}

// writeLambdaError answers in the error shape of the Lambda REST API, which
// the AWS SDK turns into typed errors (types.ResourceNotFoundException, ...).
func writeLambdaError(w http.ResponseWriter, status int, code, kind, message string) {
	h := w.Header()
	h.Set("X-Amzn-Errortype", code)
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Type    string `json:"Type"`
		Message string `json:"message"`
	}{kind, message})
}
