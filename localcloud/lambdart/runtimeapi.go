package lambdart

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/clubdev/club/localcloud/invoke"
)

// maxPayloadBytes is Lambda's limit on a synchronous request and response.
const maxPayloadBytes = 6 << 20

// Runtime API headers (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html).
const (
	headerRequestID     = "Lambda-Runtime-Aws-Request-Id"
	headerDeadlineMS    = "Lambda-Runtime-Deadline-Ms"
	headerFunctionARN   = "Lambda-Runtime-Invoked-Function-Arn"
	headerTraceID       = "Lambda-Runtime-Trace-Id"
	headerErrorType     = "Lambda-Runtime-Function-Error-Type"
	trailerErrorBody    = "Lambda-Runtime-Function-Error-Body"
	errorTypeUnknown    = "Runtime.Unknown"
	runtimeAPIRoutePath = "/_runtime/{function}/{instance}/2018-06-01/runtime/"
)

// RuntimeHandler serves the Lambda Runtime API (version 2018-06-01) to the
// processes, under /_runtime/{function}/{instance}/2018-06-01/runtime/:
//
//	GET  invocation/next                 long poll for the next invocation
//	POST invocation/{requestId}/response the invocation's result
//	POST invocation/{requestId}/error    a function error
//	POST init/error                      an init failure (the process then exits)
//
// Mount it on the path prefix "/_runtime/" without stripping the prefix,
// on a server with no write timeout (next is a long poll). A request for a
// process that is not (or no longer) running is answered 403, which makes
// aws-lambda-go exit.
func (r *Runtime) RuntimeHandler() http.Handler { return r.runtimeAPI }

func (r *Runtime) newRuntimeAPI() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+runtimeAPIRoutePath+"invocation/next", r.handleNext)
	mux.HandleFunc("POST "+runtimeAPIRoutePath+"invocation/{requestID}/response", r.handleResponse)
	mux.HandleFunc("POST "+runtimeAPIRoutePath+"invocation/{requestID}/error", r.handleError)
	mux.HandleFunc("POST "+runtimeAPIRoutePath+"init/error", r.handleInitError)
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		writeRuntimeError(w, http.StatusNotFound, "NotFound", "no Runtime API route "+req.Method+" "+req.URL.Path)
	})
	return mux
}

// processLocked finds the live process a Runtime API request comes from.
func (r *Runtime) processLocked(req *http.Request) (*function, *process) {
	fn := r.functions[req.PathValue("function")]
	if fn == nil {
		return nil, nil
	}
	p := fn.procs[req.PathValue("instance")]
	if p == nil || p.exited {
		return nil, nil
	}
	return fn, p
}

func (r *Runtime) handleNext(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	fn, p := r.processLocked(req)
	if p == nil {
		r.mu.Unlock()
		writeUnknownInstance(w)
		return
	}
	if p.recycled {
		// Timed out and being killed: it must not pick up more work.
		r.mu.Unlock()
		writeUnknownInstance(w)
		return
	}
	if p.current != nil || p.waiting != nil {
		r.mu.Unlock()
		writeRuntimeError(w, http.StatusForbidden, "InvalidStateTransition",
			"next called while an invocation is in progress or another next is pending")
		return
	}
	if !p.polled {
		p.polled = true
		p.slot.failures = 0
		r.markReadyLocked(p)
	}
	var inv *invocation
	var ch chan *invocation
	if len(fn.pending) > 0 {
		inv = fn.pending[0]
		fn.pending = fn.pending[1:]
		r.dispatchLocked(fn, p, inv)
	} else {
		ch = make(chan *invocation, 1)
		p.waiting = ch
		fn.idle = append(fn.idle, p)
	}
	r.mu.Unlock()

	if inv == nil {
		select {
		case inv = <-ch:
		case <-p.gone:
			return // the process died while polling
		case <-req.Context().Done():
			r.mu.Lock()
			if p.waiting == ch {
				p.waiting = nil
				if i := indexOf(fn.idle, p); i >= 0 {
					fn.idle = append(fn.idle[:i], fn.idle[i+1:]...)
				}
			}
			// Otherwise an invocation was handed over just now; p holds it
			// and its exit or the timeout will end it.
			r.mu.Unlock()
			return
		}
	}

	h := w.Header()
	h.Set(headerRequestID, inv.id)
	h.Set(headerDeadlineMS, strconv.FormatInt(inv.deadline.UnixMilli(), 10))
	h.Set(headerFunctionARN, fn.arn)
	h.Set(headerTraceID, inv.traceID)
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(inv.payload) // if the process is gone, its exit ends the invocation
}

func (r *Runtime) handleResponse(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxPayloadBytes))
	var tooLarge *http.MaxBytesError
	if err != nil && !errors.As(err, &tooLarge) {
		writeRuntimeError(w, http.StatusBadRequest, "InvalidRequest", "read response: "+err.Error())
		return
	}
	var res invoke.Result
	switch {
	case tooLarge != nil:
		res = errorResult(errorTypeResponseSize, fmt.Sprintf(
			"Response payload size exceeded maximum allowed payload size (%d bytes).", maxPayloadBytes))
	case req.Trailer.Get(headerErrorType) != "":
		// A streamed response that failed midway: aws-lambda-go reports the
		// error in trailers.
		doc, _ := base64.StdEncoding.DecodeString(req.Trailer.Get(trailerErrorBody))
		res = errorDocument(doc, req.Trailer.Get(headerErrorType))
	default:
		res = invoke.Result{Payload: body}
	}
	if !r.completeFromRuntime(w, req, res) {
		return
	}
	if tooLarge != nil {
		writeRuntimeError(w, http.StatusRequestEntityTooLarge, errorTypeResponseSize, "response payload too large")
		return
	}
	writeAccepted(w)
}

func (r *Runtime) handleError(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxPayloadBytes))
	if err != nil {
		body = nil // unreadable: fall back to the header, as Lambda does
	}
	if r.completeFromRuntime(w, req, errorDocument(body, req.Header.Get(headerErrorType))) {
		writeAccepted(w)
	}
}

// completeFromRuntime ends the invocation named in the path with res. It
// writes an error response and reports false if the process does not hold
// that invocation (it ended already, for instance by timing out).
func (r *Runtime) completeFromRuntime(w http.ResponseWriter, req *http.Request, res invoke.Result) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn, p := r.processLocked(req)
	if p == nil {
		writeUnknownInstance(w)
		return false
	}
	inv := p.current
	if inv == nil || inv.id != req.PathValue("requestID") {
		writeRuntimeError(w, http.StatusBadRequest, "InvalidRequestID", "Invalid request ID")
		return false
	}
	r.finishLocked(fn, inv, outcome{result: res})
	return true
}

func (r *Runtime) handleInitError(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxPayloadBytes))
	if err != nil {
		body = nil
	}
	res := errorDocument(body, req.Header.Get(headerErrorType))
	r.mu.Lock()
	defer r.mu.Unlock()
	_, p := r.processLocked(req)
	if p == nil {
		writeUnknownInstance(w)
		return
	}
	// Served to the invocation this failed init fails, when the process exits.
	p.initError = &res
	writeAccepted(w)
}

// errorDocument is the Invoke API payload of a function error. A JSON
// object from the runtime ({errorMessage, errorType, stackTrace}) passes
// through untouched, so the errorType aws-lambda-go derives from the Go
// error type reaches Step Functions as is. Otherwise the document is built
// from the error type header, as Lambda does.
func errorDocument(body []byte, headerType string) invoke.Result {
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) == nil && obj != nil {
		return invoke.Result{Payload: body, FunctionError: functionErrorUnhandled}
	}
	if headerType == "" {
		headerType = errorTypeUnknown
	}
	return errorResult(headerType, string(body))
}

func writeAccepted(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

func writeUnknownInstance(w http.ResponseWriter) {
	writeRuntimeError(w, http.StatusForbidden, "InvalidRuntimeInstance",
		"this process is not a running instance of the function")
}

func writeRuntimeError(w http.ResponseWriter, status int, errorType, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(invoke.ErrorInfo{ErrorMessage: message, ErrorType: errorType})
}
