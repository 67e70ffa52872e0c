// Package lambdart is the Lambda data plane of the local cloud: it builds
// function binaries and runs them as real OS processes speaking the Lambda
// Runtime API, the way the provided.al2023 runtime runs an unmodified
// lambda.Start binary on AWS. The control plane (CreateFunction, event
// source mappings, ...) stays with the emulator; this package only runs
// code.
//
// # Building
//
// Build and BuildAll compile each function's package into its bootstrap
// binary with `go build -trimpath`, CGO disabled, for the host. Failures are
// *BuildError values naming the function and carrying the compiler output;
// BuildAll reports every failure, not just the first.
//
// # Running
//
// A Runtime keeps Concurrency processes per function. Each process gets its
// own instance id and AWS_LAMBDA_RUNTIME_API=<RuntimeAPIHost>/_runtime/<function>/<instance>
// (aws-lambda-go prepends "http://" and appends "/2018-06-01/runtime/...",
// so the path prefix routes its calls to RuntimeHandler), the environment
// Lambda sets (AWS_LAMBDA_FUNCTION_NAME, AWS_REGION, TZ=:UTC, ...) and the
// function's variables, but not the host's environment. Processes run in
// their own process group; their output goes to <LogDir>/<function>.log.
//
//	rt := lambdart.New(lambdart.Options{RuntimeAPIHost: "127.0.0.1:4566", Env: sdkEnv, LogDir: ".club/logs"})
//	_ = rt.AddFunction(lambdart.FunctionConfig{Name: "api", Binary: ".club/build/api/bootstrap", Timeout: 10 * time.Second, Concurrency: 2})
//	mux.Handle("/_runtime/", rt.RuntimeHandler())
//	mux.Handle("POST /2015-03-31/functions/{name}/invocations", rt.InvokeHandler())
//	_ = rt.Start(ctx)
//	_ = rt.Ready(ctx)
//	defer rt.Stop()
//
// # Invocation semantics
//
//   - Ordering and concurrency: invocations of a function are handed to its
//     processes in arrival order, one at a time per process; when every
//     process is busy they wait. A function therefore never runs more than
//     Concurrency invocations at once (Stats reports the maximum seen).
//   - Results: a function error comes back as invoke.Result with
//     FunctionError "Unhandled" and the error document the runtime sent,
//     untouched, so the errorType aws-lambda-go derives from the Go error
//     type (e.g. "PaymentDeclined" for *PaymentDeclined) reaches Step
//     Functions as on AWS. A panic inside the handler is reported by
//     aws-lambda-go itself (errorType is the panic value's type) before the
//     process exits.
//   - Crashes: a process that exits while holding an invocation fails it at
//     once with Runtime.ExitError ("Runtime exited with error: exit status
//     2"). Any exited process is restarted; one that keeps dying before its
//     first poll backs off exponentially (up to 5 s) and is reported in the
//     function log. While the latest process of every slot has died during
//     init, invocations fail at once with that init failure
//     (Runtime.ExitError, or the document the runtime posted to
//     /init/error) instead of waiting, as each would fail its own init on
//     AWS.
//   - Timeouts: an invocation still running after the function's Timeout
//     (counted from its hand-over to a process) fails with Sandbox.Timedout
//     ("Task timed out after N.NN seconds"); its process group is killed and
//     a fresh process started, as AWS recycles the sandbox.
//   - Idempotency: none is added. A synchronous invocation runs at most
//     once; an asynchronous one runs up to 1+len(AsyncRetryDelays) times
//     with the same request id, so functions must be idempotent as on AWS.
//   - Cancellation: a caller giving up withdraws a queued invocation; one
//     already running completes in its process and its result is dropped.
//
// All methods of Runtime are safe for concurrent use. Stop leaves no
// process behind: every process group gets SIGTERM, then SIGKILL after a
// grace period. A process orphaned by a crash of the local cloud itself
// exits on its own when its Runtime API connection breaks.
package lambdart
