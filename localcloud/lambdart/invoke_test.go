package lambdart_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/localcloud/lambdart"
)

func TestSDKInvokeRoundTrip(t *testing.T) {
	t.Parallel()
	e := setup(t, setupOptions{}, fn("echo", "echo"))

	tests := []struct {
		name     string
		function string
	}{
		{"by name", "echo"},
		{"by qualified name", "echo:$LATEST"},
		{"by ARN", "arn:aws:lambda:us-east-1:000000000000:function:echo"},
		{"by partial ARN", "000000000000:function:echo"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			payload := []byte(`{"hello":"world","n":[1,2,3]}`)
			out, err := e.client.Invoke(t.Context(), &lambda.InvokeInput{
				FunctionName: aws.String(tc.function),
				Payload:      payload,
			})
			require.NoError(t, err)
			require.Equal(t, int32(http.StatusOK), out.StatusCode)
			require.Nil(t, out.FunctionError)
			require.Equal(t, "$LATEST", aws.ToString(out.ExecutedVersion))
			require.JSONEq(t, string(payload), string(out.Payload))
		})
	}
	require.Equal(t, uint64(len(tests)), e.stats(t, "echo").Invocations)

	log, err := os.ReadFile(filepath.Join(e.logDir, "echo.log"))
	require.NoError(t, err)
	require.Equal(t, len(tests), strings.Count(string(log), "START RequestId: "))
	require.Equal(t, len(tests), strings.Count(string(log), "REPORT RequestId: "))
}

func TestSDKInvokeUnknownFunction(t *testing.T) {
	t.Parallel()
	e := setup(t, setupOptions{}, fn("echo", "echo"))

	_, err := e.client.Invoke(t.Context(), &lambda.InvokeInput{FunctionName: aws.String("nope")})
	var notFound *types.ResourceNotFoundException
	require.ErrorAs(t, err, &notFound)
	require.Contains(t, notFound.ErrorMessage(), "Function not found: arn:aws:lambda:us-east-1:000000000000:function:nope")

	_, err = e.rt.Invoke(t.Context(), "nope", nil)
	require.ErrorIs(t, err, lambdart.ErrFunctionNotFound)
}

func TestSDKInvokeDryRun(t *testing.T) {
	t.Parallel()
	e := setup(t, setupOptions{}, fn("echo", "echo"))

	out, err := e.client.Invoke(t.Context(), &lambda.InvokeInput{
		FunctionName:   aws.String("echo"),
		InvocationType: types.InvocationTypeDryRun,
	})
	require.NoError(t, err)
	require.Equal(t, int32(http.StatusNoContent), out.StatusCode)
	require.Zero(t, e.stats(t, "echo").Invocations, "a dry run runs nothing")
}

func TestProcessEnvironmentAndContext(t *testing.T) {
	t.Parallel()
	cfg := fn("env", "env")
	cfg.MemoryMB = 256
	cfg.Timeout = 7 * time.Second
	cfg.Env = map[string]string{"CUSTOM": "from-function", "SHARED": "overridden", "AWS_REGION": "eu-west-1"}
	e := setup(t, setupOptions{}, cfg)

	vars := []string{
		"AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "AWS_LAMBDA_FUNCTION_VERSION",
		"AWS_LAMBDA_LOG_GROUP_NAME", "AWS_LAMBDA_LOG_STREAM_NAME", "AWS_LAMBDA_RUNTIME_API",
		"AWS_REGION", "AWS_DEFAULT_REGION", "_HANDLER", "LAMBDA_TASK_ROOT", "TZ",
		"CUSTOM", "SHARED", "AWS_ACCESS_KEY_ID", "HOME",
	}
	res := e.invoke(t, "env", map[string]any{"vars": vars})
	require.False(t, res.Failed(), "%s", res.Payload)
	var got struct {
		Env                map[string]string `json:"env"`
		RequestID          string            `json:"requestId"`
		InvokedFunctionArn string            `json:"invokedFunctionArn"`
		RemainingMS        int64             `json:"remainingMs"`
	}
	require.NoError(t, json.Unmarshal(res.Payload, &got))

	require.Equal(t, "env", got.Env["AWS_LAMBDA_FUNCTION_NAME"])
	require.Equal(t, "256", got.Env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"])
	require.Equal(t, "$LATEST", got.Env["AWS_LAMBDA_FUNCTION_VERSION"])
	require.Equal(t, "/aws/lambda/env", got.Env["AWS_LAMBDA_LOG_GROUP_NAME"])
	require.Contains(t, got.Env["AWS_LAMBDA_LOG_STREAM_NAME"], "/[$LATEST]")
	require.Regexp(t, `^127\.0\.0\.1:\d+/_runtime/env/[0-9a-f]{32}$`, got.Env["AWS_LAMBDA_RUNTIME_API"])
	require.Equal(t, "us-east-1", got.Env["AWS_REGION"], "reserved variables win over the function's")
	require.Equal(t, "us-east-1", got.Env["AWS_DEFAULT_REGION"])
	require.Equal(t, "bootstrap", got.Env["_HANDLER"])
	require.Equal(t, filepath.Dir(binaries["env"]), got.Env["LAMBDA_TASK_ROOT"])
	require.Equal(t, ":UTC", got.Env["TZ"])
	require.Equal(t, "from-function", got.Env["CUSTOM"])
	require.Equal(t, "overridden", got.Env["SHARED"], "function env wins over runtime env")
	require.Equal(t, "test", got.Env["AWS_ACCESS_KEY_ID"])
	require.Empty(t, got.Env["HOME"], "the host environment is not inherited")

	require.Regexp(t, `^[0-9a-f-]{36}$`, got.RequestID)
	require.Equal(t, "arn:aws:lambda:us-east-1:000000000000:function:env", got.InvokedFunctionArn)
	require.Greater(t, got.RemainingMS, int64(5000), "deadline is the function timeout from dispatch")
	require.LessOrEqual(t, got.RemainingMS, int64(7000))
}

func TestFunctionErrorTypePassesThrough(t *testing.T) {
	t.Parallel()
	e := setup(t, setupOptions{}, fn("fail", "fail"))

	tests := []struct {
		name        string
		payload     string
		wantType    string
		wantMessage string
	}{
		{"custom error type", `{}`, "PaymentDeclined", "payment declined: insufficient funds"},
		// aws-lambda-go names the pointed-to type of errors.New's *errorString.
		{"errors.New", `{"plain":true}`, "errorString", "plain failure"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := e.client.Invoke(t.Context(), &lambda.InvokeInput{
				FunctionName: aws.String("fail"),
				Payload:      []byte(tc.payload),
			})
			require.NoError(t, err)
			require.Equal(t, int32(http.StatusOK), out.StatusCode)
			require.Equal(t, "Unhandled", aws.ToString(out.FunctionError))
			var doc map[string]any
			require.NoError(t, json.Unmarshal(out.Payload, &doc))
			require.Equal(t, tc.wantType, doc["errorType"])
			require.Equal(t, tc.wantMessage, doc["errorMessage"])

			res, err := e.rt.Invoke(t.Context(), "fail", []byte(tc.payload))
			require.NoError(t, err)
			require.True(t, res.Failed())
			require.Equal(t, tc.wantType, res.Error().ErrorType)
		})
	}
	st := e.stats(t, "fail")
	require.Equal(t, uint64(4), st.Errors)
	require.Zero(t, st.Crashes, "a returned error keeps the process")
}

func TestCrashFailsInvocationAndRestarts(t *testing.T) {
	t.Parallel()
	e := setup(t, setupOptions{}, fn("crash", "crash"))

	tests := []struct {
		mode        string
		wantType    string
		wantMessage string
	}{
		// aws-lambda-go recovers a handler panic, reports it (the panic
		// value's type is the errorType), then exits: as on AWS.
		{"panic", "string", "boom"},
		// Nothing can recover a panic on another goroutine: the process dies
		// holding the invocation.
		{"goroutine-panic", "Runtime.ExitError", "Runtime exited with error: exit status 2"},
		{"exit", "Runtime.ExitError", "Runtime exited with error: exit status 3"},
	}
	var crashes uint64
	for _, tc := range tests {
		// Sequential on purpose: each case restarts the one process.
		t.Run(tc.mode, func(t *testing.T) {
			before := decodePID(t, e.invoke(t, "crash", map[string]string{}))

			// A crash fails the invocation at once: had it waited for the
			// function's timeout, the result would be Sandbox.Timedout.
			res := e.invoke(t, "crash", map[string]string{"mode": tc.mode})
			require.True(t, res.Failed())
			require.Equal(t, "Unhandled", res.FunctionError)
			require.Equal(t, tc.wantType, res.Error().ErrorType)
			require.Contains(t, res.Error().ErrorMessage, tc.wantMessage)

			crashes++
			require.Eventually(t, func() bool {
				st := e.stats(t, "crash")
				return st.Crashes == crashes && st.Restarts == crashes && st.Idle == 1
			}, patience.Wait(), 10*time.Millisecond, "the process is restarted")

			after := decodePID(t, e.invoke(t, "crash", map[string]string{}))
			require.NotEqual(t, before, after, "a new process serves the next invocation")
		})
	}
	require.Contains(t, e.logs.String(), "[crash] [lambdart] instance 0")
}

func TestCrashOnStartBacksOffAndFailsQueuedInvocations(t *testing.T) {
	t.Parallel()
	cfg := fn("crash", "broken")
	cfg.Env = map[string]string{"CRASH_ON_START": "1"}
	start := time.Now()
	e := setup(t, setupOptions{skipReady: true}, cfg)

	// An invocation fails with the init failure instead of waiting forever.
	res := e.invoke(t, "broken", map[string]string{})
	require.Equal(t, "Runtime.ExitError", res.Error().ErrorType)
	require.Contains(t, res.Error().ErrorMessage, "exit status 4")

	require.Eventually(t, func() bool {
		return strings.Contains(e.logs.String(), "crashes on start (3 times in a row")
	}, patience.Wait(), 10*time.Millisecond)
	// Three failed starts with 100 ms and 200 ms between them: no tight loop.
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	require.LessOrEqual(t, e.stats(t, "broken").Restarts, uint64(4))

	// While it cannot start, invocations fail at once rather than waiting
	// for the next attempt (400 ms, 800 ms, ... away).
	// Each would otherwise be served by a start attempt of its own: five
	// invocations in a row, with attempts 400 ms and more apart, would see
	// five more restarts.
	restarts := e.stats(t, "broken").Restarts
	for range 5 {
		res := e.invoke(t, "broken", map[string]string{})
		require.Equal(t, "Runtime.ExitError", res.Error().ErrorType)
	}
	require.Less(t, e.stats(t, "broken").Restarts-restarts, uint64(5), "the invocations did not wait for start attempts")

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond) // patience:exempt the caller's own timeout is what is tested
	defer cancel()
	err := e.rt.Ready(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "broken instance 0: Runtime exited with error: exit status 4")
}

func TestBinaryThatCannotStartFailsInvocations(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "bootstrap")
	require.NoError(t, os.WriteFile(bin, []byte("not a program\n"), 0o755))
	e := setup(t, setupOptions{skipReady: true}, lambdart.FunctionConfig{Name: "garbage", Binary: bin})

	res := e.invoke(t, "garbage", map[string]string{})
	require.Equal(t, "Unhandled", res.FunctionError)
	require.Equal(t, "Runtime.InvalidEntrypoint", res.Error().ErrorType)
	require.Contains(t, res.Error().ErrorMessage, "exec format error")
}

func TestConcurrencyIsBoundedByProcesses(t *testing.T) {
	t.Parallel()
	cfg := fn("sleep", "bounded")
	cfg.Concurrency = 2
	e := setup(t, setupOptions{}, cfg)

	const calls, sleepMS = 10, 200
	type outcome struct {
		pid int
		err error
	}
	outcomes := make(chan outcome, calls)
	start := time.Now()
	for range calls {
		go func() {
			res, err := e.rt.Invoke(t.Context(), "bounded", []byte(`{"ms":200}`))
			switch {
			case err != nil:
				outcomes <- outcome{err: err}
			case res.Failed():
				outcomes <- outcome{err: errors.New(string(res.Payload))}
			default:
				var r pidResponse
				err := json.Unmarshal(res.Payload, &r)
				outcomes <- outcome{pid: r.PID, err: err}
			}
		}()
	}
	distinct := map[int]bool{}
	for range calls {
		o := <-outcomes
		require.NoError(t, o.err)
		distinct[o.pid] = true
	}
	elapsed := time.Since(start)

	st := e.stats(t, "bounded")
	require.Equal(t, uint64(calls), st.Invocations)
	require.Equal(t, 2, st.MaxConcurrency, "never more than Concurrency at once")
	require.Len(t, distinct, 2, "both processes served")
	require.GreaterOrEqual(t, elapsed, calls/2*sleepMS*time.Millisecond, "five rounds of two")
}

func TestCancelledCallerWithdrawsQueuedInvocation(t *testing.T) {
	t.Parallel()
	e := setup(t, setupOptions{}, fn("sleep", "single"))

	busy := make(chan error, 1)
	go func() {
		_, err := e.rt.Invoke(t.Context(), "single", []byte(`{"ms":1000}`))
		busy <- err
	}()
	require.Eventually(t, func() bool { return e.stats(t, "single").Busy == 1 }, patience.Wait(), 5*time.Millisecond)

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond) // patience:exempt the caller's own timeout is what is tested
	defer cancel()
	_, err := e.rt.Invoke(ctx, "single", []byte(`{"ms":0}`))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Zero(t, e.stats(t, "single").Queued, "the withdrawn invocation left the queue")

	require.NoError(t, <-busy)
	require.Equal(t, uint64(1), e.stats(t, "single").Invocations, "the withdrawn invocation never ran")
}

func TestAsyncEventInvokeRetriesOnFailure(t *testing.T) {
	t.Parallel()
	e := setup(t, setupOptions{retryDelays: []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}},
		fn("record", "record"))
	dir := t.TempDir()

	tests := []struct {
		name      string
		fail      bool
		wantLines int
	}{
		{"success runs once", false, 1},
		{"failure is retried twice", true, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			payload, err := json.Marshal(map[string]any{"file": file, "fail": tc.fail})
			require.NoError(t, err)
			before := e.stats(t, "record").Invocations

			out, err := e.client.Invoke(t.Context(), &lambda.InvokeInput{
				FunctionName:   aws.String("record"),
				InvocationType: types.InvocationTypeEvent,
				Payload:        payload,
			})
			require.NoError(t, err)
			require.Equal(t, int32(http.StatusAccepted), out.StatusCode)

			// All attempts are counted once the last one has ended.
			require.Eventually(t, func() bool {
				return e.stats(t, "record").Invocations == before+uint64(tc.wantLines)
			}, patience.Wait(), 10*time.Millisecond)
			if tc.fail {
				require.Eventually(t, func() bool {
					return strings.Contains(e.logs.String(), "failed after 3 attempts")
				}, patience.Wait(), 10*time.Millisecond, "no attempt after the last retry")
			}
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			lines := strings.Fields(string(data))
			require.Len(t, lines, tc.wantLines)
			for _, id := range lines {
				require.Equal(t, lines[0], id, "retries keep the request id")
			}
		})
	}
}

func TestRuntimeAPIRejectsUnknownInstance(t *testing.T) {
	t.Parallel()
	e := setup(t, setupOptions{}, fn("echo", "echo"))

	resp, err := http.Get(e.url + "/_runtime/echo/0123456789abcdef0123456789abcdef/2018-06-01/runtime/invocation/next")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}

func TestAddFunctionValidates(t *testing.T) {
	t.Parallel()
	rt := lambdart.New(lambdart.Options{RuntimeAPIHost: "127.0.0.1:1"})
	t.Cleanup(func() { require.NoError(t, rt.Stop()) })

	tests := []struct {
		name string
		cfg  lambdart.FunctionConfig
		want string
	}{
		{"bad name", lambdart.FunctionConfig{Name: "a b", Binary: binaries["echo"]}, "invalid name"},
		{"no binary", lambdart.FunctionConfig{Name: "x"}, "binary is empty"},
		{"missing binary", lambdart.FunctionConfig{Name: "x", Binary: filepath.Join(t.TempDir(), "nope")}, "no such file"},
		{"negative concurrency", lambdart.FunctionConfig{Name: "x", Binary: binaries["echo"], Concurrency: -1}, "must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, rt.AddFunction(tc.cfg), tc.want)
		})
	}
	require.NoError(t, rt.AddFunction(lambdart.FunctionConfig{Name: "ok", Binary: binaries["echo"]}))
	require.ErrorContains(t, rt.AddFunction(lambdart.FunctionConfig{Name: "ok", Binary: binaries["echo"]}), "already added")
}

func TestInvokeAPIErrorShapes(t *testing.T) {
	t.Parallel()
	e := setup(t, setupOptions{}, fn("echo", "echo"))

	tests := []struct {
		name       string
		path       string
		header     map[string]string
		body       []byte
		wantStatus int
		wantType   string
	}{
		{"unknown function", "/2015-03-31/functions/ghost/invocations", nil, []byte(`{}`),
			http.StatusNotFound, "ResourceNotFoundException"},
		{"unknown invocation type", "/2015-03-31/functions/echo/invocations", map[string]string{"X-Amz-Invocation-Type": "Later"},
			[]byte(`{}`), http.StatusBadRequest, "InvalidParameterValueException"},
		{"payload over 6 MB", "/2015-03-31/functions/echo/invocations", nil, make([]byte, 6<<20+1),
			http.StatusRequestEntityTooLarge, "RequestTooLargeException"},
		{"other operation", "/2015-03-31/functions/echo", nil, nil,
			http.StatusNotFound, "UnknownOperationException"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+tc.path, bytes.NewReader(tc.body))
			require.NoError(t, err)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, tc.wantStatus, resp.StatusCode)
			require.Equal(t, tc.wantType, resp.Header.Get("X-Amzn-ErrorType"))
			var body struct {
				Type    string `json:"Type"`
				Message string `json:"message"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
			require.Equal(t, "User", body.Type)
			require.NotEmpty(t, body.Message)
		})
	}
	require.Zero(t, e.stats(t, "echo").Invocations)
}
