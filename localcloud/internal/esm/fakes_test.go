package esm

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/localcloud/invoke"
)

// fakeInvoker records invocations and answers them with a scripted handler.
// It tracks how many invocations run at once.
type fakeInvoker struct {
	handle func(call int, payload []byte) (invoke.Result, error)

	mu          sync.Mutex
	payloads    [][]byte
	inFlight    int
	maxInFlight int
}

var _ invoke.Invoker = (*fakeInvoker)(nil)

func (f *fakeInvoker) Invoke(ctx context.Context, _ string, payload []byte) (invoke.Result, error) {
	f.mu.Lock()
	f.payloads = append(f.payloads, payload)
	call := len(f.payloads)
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if err := ctx.Err(); err != nil {
		return invoke.Result{}, err
	}
	if f.handle == nil {
		return invoke.Result{Payload: []byte("null")}, nil
	}
	return f.handle(call, payload)
}

func (f *fakeInvoker) calls() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.payloads...)
}

func (f *fakeInvoker) peak() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxInFlight
}

// functionError is the result of a function that returned an error.
func functionError(msg string) invoke.Result {
	return invoke.Result{
		Payload:       []byte(`{"errorMessage":"` + msg + `","errorType":"errorString"}`),
		FunctionError: "Unhandled",
	}
}

// batchFailures is a partial batch response naming the given items.
func batchFailures(ids ...string) invoke.Result {
	type item struct {
		ItemIdentifier string `json:"itemIdentifier"`
	}
	resp := struct {
		BatchItemFailures []item `json:"batchItemFailures"`
	}{BatchItemFailures: []item{}}
	for _, id := range ids {
		resp.BatchItemFailures = append(resp.BatchItemFailures, item{id})
	}
	b, _ := json.Marshal(resp)
	return invoke.Result{Payload: b}
}

// fakeDestination records on-failure records.
type fakeDestination struct {
	mu      sync.Mutex
	arns    []string
	records []OnFailureRecord
}

func (d *fakeDestination) SendToDestination(_ context.Context, arn string, body []byte) error {
	var rec OnFailureRecord
	if err := json.Unmarshal(body, &rec); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.arns = append(d.arns, arn)
	d.records = append(d.records, rec)
	return nil
}

func (d *fakeDestination) sent() []OnFailureRecord {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]OnFailureRecord(nil), d.records...)
}

// quietLogger discards logs; tests assert on facts, not on log lines.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// run starts a poller's Run in the background and stops it at the end of
// the test, failing the test if Run returns an error or does not stop.
func run(t *testing.T, runner interface{ Run(context.Context) error }) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runner.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(patience.Wait()):
			t.Error("poller did not stop")
		}
	})
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, patience.Within(within), 5*time.Millisecond, what)
}
