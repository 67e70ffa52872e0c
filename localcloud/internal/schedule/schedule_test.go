package schedule

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/clock"
	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/localcloud/invoke"
)

// newFakeClock is a clock that moves only when the test advances it.
func newFakeClock(now time.Time) *clock.Fake { return clock.NewFake(now) }

// recorder is a fake function that records payloads and fails the first
// failFirst invocations.
type recorder struct {
	mu        sync.Mutex
	payloads  [][]byte
	failFirst int
}

func (r *recorder) Invoke(_ context.Context, _ string, payload []byte) (invoke.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.payloads = append(r.payloads, payload)
	if len(r.payloads) <= r.failFirst {
		return invoke.Result{Payload: []byte(`{"errorMessage":"sweep failed","errorType":"SweepError"}`), FunctionError: "Unhandled"}, nil
	}
	return invoke.Result{Payload: []byte("null")}, nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.payloads)
}

func (r *recorder) events(t *testing.T) []events.EventBridgeEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []events.EventBridgeEvent
	for _, p := range r.payloads {
		var ev events.EventBridgeEvent
		require.NoError(t, json.Unmarshal(p, &ev))
		out = append(out, ev)
	}
	return out
}

var start = time.Date(2026, 1, 1, 10, 7, 0, 0, time.UTC)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// runInBackground runs the Runner until the end of the test.
func runInBackground(t *testing.T, r *Runner) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(patience.Wait()):
			t.Error("Run did not stop")
		}
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, patience.Wait(), time.Millisecond, what)
}

func TestRunFiresOnSchedule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		expr  string
		speed float64
		steps []time.Duration // clock advances, each of which fires once
		want  []time.Time     // the event times
	}{
		{
			name:  "rate in real time",
			expr:  "rate(1 minute)",
			steps: []time.Duration{time.Minute, time.Minute, time.Minute, time.Minute, time.Minute},
			want:  []time.Time{start.Add(time.Minute), start.Add(2 * time.Minute), start.Add(3 * time.Minute), start.Add(4 * time.Minute), start.Add(5 * time.Minute)},
		},
		{
			name:  "rate at speed 60",
			expr:  "rate(5 minutes)",
			speed: 60,
			steps: []time.Duration{5 * time.Second, 5 * time.Second, 5 * time.Second},
			want:  []time.Time{start.Add(5 * time.Minute), start.Add(10 * time.Minute), start.Add(15 * time.Minute)},
		},
		{
			name:  "cron aligned to the clock",
			expr:  "cron(0/15 * * * ? *)",
			steps: []time.Duration{8 * time.Minute, 15 * time.Minute, 15 * time.Minute},
			want: []time.Time{
				time.Date(2026, 1, 1, 10, 15, 0, 0, time.UTC),
				time.Date(2026, 1, 1, 10, 30, 0, 0, time.UTC),
				time.Date(2026, 1, 1, 10, 45, 0, 0, time.UTC),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock(start)
			fn := &recorder{}
			r, err := New(Schedule{Name: "outbox-sweeper", FunctionName: "sweeper", Expression: tt.expr, Enabled: true},
				fn, clock, quietLogger(), Options{Speed: tt.speed})
			require.NoError(t, err)
			runInBackground(t, r)

			for i, step := range tt.steps {
				waitFor(t, "Run waits for the next fire", func() bool { return clock.Waiters() == 1 })
				// Just short of the fire time nothing happens...
				clock.Advance(step - time.Nanosecond)
				require.Equal(t, i, fn.count(), "fired early")
				// ...and at the fire time it fires once.
				clock.Advance(time.Nanosecond)
				waitFor(t, "fire", func() bool { return fn.count() == i+1 })
			}
			waitFor(t, "Run waits for the next fire", func() bool { return clock.Waiters() == 1 })
			require.Equal(t, len(tt.want), fn.count(), "fires")

			for i, ev := range fn.events(t) {
				require.Equal(t, tt.want[i], ev.Time.UTC(), "time of fire %d", i+1)
				require.Equal(t, "0", ev.Version)
				require.NotEmpty(t, ev.ID)
				require.Equal(t, "Scheduled Event", ev.DetailType)
				require.Equal(t, "aws.events", ev.Source)
				require.Equal(t, "000000000000", ev.AccountID)
				require.Equal(t, "us-east-1", ev.Region)
				require.Equal(t, []string{"arn:aws:events:us-east-1:000000000000:rule/outbox-sweeper"}, ev.Resources)
				require.JSONEq(t, "{}", string(ev.Detail))
			}
			st := r.Stats()
			require.EqualValues(t, len(tt.want), st.Fires)
			require.EqualValues(t, len(tt.want), st.Delivered)
		})
	}
}

func TestRunSkipsMissedFires(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(start)
	fn := &recorder{}
	r, err := New(Schedule{Name: "s", FunctionName: "f", Expression: "rate(1 minute)", Enabled: true}, fn, clock, quietLogger(), Options{})
	require.NoError(t, err)
	runInBackground(t, r)

	waitFor(t, "Run waits", func() bool { return clock.Waiters() == 1 })
	clock.Advance(10 * time.Minute) // e.g. the host slept
	waitFor(t, "fire", func() bool { return fn.count() == 1 })
	waitFor(t, "Run waits again", func() bool { return clock.Waiters() == 1 })
	require.Equal(t, start.Add(10*time.Minute), fn.events(t)[0].Time.UTC(), "the latest missed time fires")
	require.EqualValues(t, 9, r.Stats().Skipped)

	clock.Advance(time.Minute) // the schedule continues from there
	waitFor(t, "fire", func() bool { return fn.count() == 2 })
	require.Equal(t, start.Add(11*time.Minute), fn.events(t)[1].Time.UTC())
}

func TestInputIsSentVerbatim(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(start)
	fn := &recorder{}
	const input = `{"sweep": {"olderThanSeconds": 60}}`
	r, err := New(Schedule{Name: "s", FunctionName: "f", Expression: "rate(1 minute)", Input: input, Enabled: true}, fn, clock, quietLogger(), Options{})
	require.NoError(t, err)
	require.NoError(t, r.FireNow(context.Background()))
	require.Equal(t, input, string(fn.payloads[0]))
}

func TestFireNowRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		failFirst int
		wantCalls int
		wantErr   bool
	}{
		{"succeeds at once", 0, 1, false},
		{"succeeds on the last retry", 2, 3, false},
		{"fails after two retries", 5, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock(start)
			fn := &recorder{failFirst: tt.failFirst}
			r, err := New(Schedule{Name: "s", FunctionName: "sweeper", Expression: "rate(1 hour)"}, fn, clock, quietLogger(), Options{})
			require.NoError(t, err)

			done := make(chan error, 1)
			go func() { done <- r.FireNow(context.Background()) }()
			// Retries wait one, then two seconds of clock time.
			for i, d := range []time.Duration{time.Second, 2 * time.Second} {
				if i+1 >= tt.wantCalls {
					break
				}
				waitFor(t, "retry waits", func() bool { return clock.Waiters() == 1 })
				clock.Advance(d - time.Nanosecond)
				require.Equal(t, i+1, fn.count(), "retried early")
				clock.Advance(time.Nanosecond)
			}
			err = <-done
			require.Equal(t, tt.wantCalls, fn.count())
			if !tt.wantErr {
				require.NoError(t, err)
				return
			}
			var fe *FunctionError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, "SweepError", fe.ErrorType)
			require.Equal(t, "sweeper", fe.Function)
			st := r.Stats()
			require.EqualValues(t, 1, st.Failed)
			require.EqualValues(t, 3, st.Invocations)
		})
	}
}

func TestFireNowUsesTheClock(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(start.Add(30 * time.Second))
	fn := &recorder{}
	r, err := New(Schedule{Name: "s", FunctionName: "f", Expression: "rate(1 hour)", RuleARN: "arn:aws:events:us-east-1:000000000000:rule/custom"}, fn, clock, quietLogger(), Options{})
	require.NoError(t, err)
	require.NoError(t, r.FireNow(context.Background()), "FireNow works on a disabled schedule")
	ev := fn.events(t)[0]
	require.Equal(t, start.Add(30*time.Second), ev.Time.UTC())
	require.Equal(t, []string{"arn:aws:events:us-east-1:000000000000:rule/custom"}, ev.Resources)
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	valid := Schedule{Name: "s", FunctionName: "f", Expression: "rate(1 minute)"}
	tests := []struct {
		name    string
		change  func(*Schedule, *Options)
		wantErr string
	}{
		{"missing name", func(s *Schedule, _ *Options) { s.Name = "" }, "Name is required"},
		{"missing function", func(s *Schedule, _ *Options) { s.FunctionName = "" }, "FunctionName is required"},
		{"bad expression", func(s *Schedule, _ *Options) { s.Expression = "rate(1 minutes)" }, "unit is"},
		{"input not JSON", func(s *Schedule, _ *Options) { s.Input = "{" }, "Input is not valid JSON"},
		{"negative speed", func(_ *Schedule, o *Options) { o.Speed = -1 }, "Speed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, o := valid, Options{}
			tt.change(&s, &o)
			_, err := New(s, &recorder{}, nil, quietLogger(), o)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestDisabledScheduleReturns(t *testing.T) {
	t.Parallel()
	r, err := New(Schedule{Name: "s", FunctionName: "f", Expression: "rate(1 minute)"}, &recorder{}, nil, quietLogger(), Options{})
	require.NoError(t, err)
	require.NoError(t, r.Run(context.Background()))
}

func TestRunStopsRetryingOnCancel(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(start)
	fn := &recorder{failFirst: 100}
	r, err := New(Schedule{Name: "s", FunctionName: "f", Expression: "rate(1 minute)", Enabled: true}, fn, clock, quietLogger(), Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	waitFor(t, "Run waits", func() bool { return clock.Waiters() == 1 })
	clock.Advance(time.Minute)
	// Run waits for the next fire and the delivery waits for its retry.
	waitFor(t, "fire and retry wait", func() bool { return fn.count() == 1 && clock.Waiters() == 2 })
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(patience.Wait()):
		t.Fatal("Run did not stop")
	}
	require.Equal(t, 1, fn.count())
	require.EqualValues(t, 1, r.Stats().Failed)
}
