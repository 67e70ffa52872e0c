package lambdart

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/clubdev/club/localcloud/invoke"
)

// The local cloud is a single-region, single-account AWS.
const (
	Region    = "us-east-1"
	AccountID = "000000000000"
)

// Defaults applied by AddFunction and New.
const (
	DefaultTimeout     = 3 * time.Second // Lambda's default function timeout
	DefaultMemoryMB    = 128             // Lambda's default memory size
	DefaultConcurrency = 1
	DefaultStopGrace   = 2 * time.Second
)

// DefaultAsyncRetryDelays are the waits before the two retries of a failed
// asynchronous invocation. AWS waits about one and then two minutes; locally
// the same shape is kept at a sixtieth of the scale so that tests and
// development loops see retries within seconds.
var DefaultAsyncRetryDelays = []time.Duration{1 * time.Second, 2 * time.Second}

var (
	// ErrFunctionNotFound is returned (wrapped) for a function that was never
	// added. The Invoke API maps it to ResourceNotFoundException.
	ErrFunctionNotFound = errors.New("function not found")
	// ErrStopped is returned (wrapped) by Invoke once Stop has begun.
	ErrStopped = errors.New("lambda runtime stopped")
)

// Options configure a Runtime.
type Options struct {
	// RuntimeAPIHost is the host:port where RuntimeHandler is served, for
	// example "127.0.0.1:4566". Processes reach the Runtime API through it.
	RuntimeAPIHost string
	// Env is added to every process: AWS_ENDPOINT_URL, credentials, ...
	// A function's own Env overrides it; the variables Lambda reserves
	// (AWS_LAMBDA_*, AWS_REGION, _HANDLER, TZ, ...) override both.
	Env map[string]string
	// LogDir, if set, receives <function>.log with the output of every
	// process of that function (appended across runs) and the runtime's
	// START/END/REPORT and restart lines.
	LogDir string
	// LogWriter, if set, receives the same lines, each prefixed with
	// "[<function>] ". It must not block for long: START and END lines are
	// written as invocations are handed out.
	LogWriter io.Writer
	// LogLine, if set, is called with every line a function's processes
	// write (not the runtime's own START/END/REPORT lines), as CloudWatch
	// Logs would receive it: the local cloud extracts the Embedded Metric
	// Format lines from it. It runs on the process's output reader and
	// must not block for long; line is only valid during the call.
	LogLine func(function string, line []byte)
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL
	// (DefaultStopGrace when zero).
	StopGrace time.Duration
	// AsyncRetryDelays are the waits before each retry of a failed
	// asynchronous (Event) invocation; their number is the number of
	// retries. Nil means DefaultAsyncRetryDelays; an empty non-nil slice
	// disables retries.
	AsyncRetryDelays []time.Duration
}

// FunctionConfig describes one function to run.
type FunctionConfig struct {
	// Name is the function name (letters, digits, '-' and '_', up to 64).
	Name string
	// Binary is the path of the function's bootstrap executable. Its
	// directory becomes LAMBDA_TASK_ROOT and the working directory.
	Binary string
	// Env is the function's environment (the template's Variables).
	Env map[string]string
	// Timeout bounds each invocation (DefaultTimeout when zero).
	Timeout time.Duration
	// MemoryMB is reported to the function; it is not enforced
	// (DefaultMemoryMB when zero).
	MemoryMB int
	// Concurrency is the number of processes, hence the most invocations
	// that run at once (DefaultConcurrency when zero).
	Concurrency int
}

// FunctionStats are counters and gauges of one function.
type FunctionStats struct {
	Invocations uint64 // completed invocations, successful or not
	Errors      uint64 // invocations that ended with a function error (including crashes and timeouts)
	Crashes     uint64 // processes that exited on their own (held an invocation or not)
	Restarts    uint64 // processes started after the first one of each slot
	Timeouts    uint64 // invocations that exceeded the function's timeout
	// BilledMs sums the durations of the invocations a process ran, each
	// rounded up to the millisecond as Lambda bills them; MemoryMB is the
	// function's memory size (GB-seconds = BilledMs/1000 × MemoryMB/1024).
	BilledMs uint64
	MemoryMB int
	// LogEvents and LogBytes count the log lines of the function (its
	// processes' output and the runtime's START, END and REPORT lines) and
	// their bytes without the newlines: what CloudWatch Logs would ingest.
	LogEvents, LogBytes uint64

	Busy   int // processes running an invocation now
	Idle   int // processes waiting for an invocation now
	Queued int // invocations waiting for a free process now
	// MaxConcurrency is the largest number of invocations seen running at
	// once since the function was added.
	MaxConcurrency int
	// PIDs are the process ids of the function's live processes.
	PIDs []int
}

// Runtime runs Lambda functions as OS processes speaking the Lambda Runtime
// API. Create it with New, add functions, Start it, mount RuntimeHandler
// (and InvokeHandler) on the front, and Stop it at the end. All methods are
// safe for concurrent use.
type Runtime struct {
	opts          Options
	retryDelays   []time.Duration
	runtimeAPI    http.Handler
	invokeAPI     http.Handler
	stopCtx       context.Context // cancelled when Stop begins
	cancelStopCtx context.CancelFunc

	// mu guards everything below and the dispatch state of every function,
	// slot, process and invocation. One lock is plenty for a local cloud
	// (an invocation costs a millisecond or two) and keeps hand-offs simple.
	mu        sync.Mutex
	functions map[string]*function
	started   bool
	stopping  bool
	readyWake chan struct{} // closed and replaced whenever a slot becomes ready

	wg sync.WaitGroup // supervisors and asynchronous invocations
}

var _ invoke.Invoker = (*Runtime)(nil)

// New returns a Runtime with no functions. Options are checked by Start.
func New(opts Options) *Runtime {
	if opts.StopGrace <= 0 {
		opts.StopGrace = DefaultStopGrace
	}
	delays := opts.AsyncRetryDelays
	if delays == nil {
		delays = DefaultAsyncRetryDelays
	}
	stopCtx, cancel := context.WithCancel(context.Background())
	r := &Runtime{
		opts:          opts,
		retryDelays:   append([]time.Duration(nil), delays...),
		stopCtx:       stopCtx,
		cancelStopCtx: cancel,
		functions:     map[string]*function{},
		readyWake:     make(chan struct{}),
	}
	r.runtimeAPI = r.newRuntimeAPI()
	r.invokeAPI = r.newInvokeAPI()
	return r
}

var functionNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// AddFunction registers a function. Before Start it is only recorded; after
// Start its processes start at once. Adding a name twice is an error.
func (r *Runtime) AddFunction(cfg FunctionConfig) error {
	if err := cfg.normalize(); err != nil {
		return fmt.Errorf("add function %q: %w", cfg.Name, err)
	}
	sink, err := openLogSink(r.opts.LogDir, cfg.Name, r.opts.LogWriter)
	if err != nil {
		return fmt.Errorf("add function %q: %w", cfg.Name, err)
	}
	if onLine := r.opts.LogLine; onLine != nil {
		name := cfg.Name
		sink.onLine = func(line []byte) { onLine(name, line) }
	}
	fn := newFunction(cfg, sink)

	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.stopping:
		err = ErrStopped
	case r.functions[cfg.Name] != nil:
		err = errors.New("already added")
	}
	if err != nil {
		_ = sink.close() // nothing was written; the registration error matters
		return fmt.Errorf("add function %q: %w", cfg.Name, err)
	}
	r.functions[cfg.Name] = fn
	if r.started {
		r.superviseLocked(fn)
	}
	return nil
}

func (c *FunctionConfig) normalize() error {
	var errs []error
	if !functionNameRE.MatchString(c.Name) {
		errs = append(errs, fmt.Errorf("invalid name (want %s)", functionNameRE))
	}
	if c.Binary == "" {
		errs = append(errs, errors.New("binary is empty"))
	} else if abs, err := filepath.Abs(c.Binary); err != nil {
		errs = append(errs, fmt.Errorf("resolve binary: %w", err))
	} else if info, err := os.Stat(abs); err != nil {
		errs = append(errs, fmt.Errorf("binary: %w", err))
	} else if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		errs = append(errs, fmt.Errorf("binary %s is not an executable file", abs))
	} else {
		c.Binary = abs
	}
	if c.Timeout < 0 || c.MemoryMB < 0 || c.Concurrency < 0 {
		errs = append(errs, errors.New("timeout, memory and concurrency must not be negative"))
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MemoryMB == 0 {
		c.MemoryMB = DefaultMemoryMB
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	env := make(map[string]string, len(c.Env))
	for k, v := range c.Env {
		env[k] = v
	}
	c.Env = env
	return errors.Join(errs...)
}

// Start starts Concurrency processes for every function added so far and
// returns without waiting for them to be ready (see Ready). ctx only bounds
// the start itself; the processes live until Stop.
func (r *Runtime) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start lambda runtime: %w", err)
	}
	if r.opts.RuntimeAPIHost == "" {
		return errors.New("start lambda runtime: RuntimeAPIHost is empty")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.stopping:
		return fmt.Errorf("start lambda runtime: %w", ErrStopped)
	case r.started:
		return errors.New("start lambda runtime: already started")
	}
	r.started = true
	for _, name := range r.functionNamesLocked() {
		r.superviseLocked(r.functions[name])
	}
	return nil
}

// Ready waits until every process of every function has polled for its
// first invocation, that is until the functions finished their init. On
// ctx expiry it returns an error naming the slots still not ready and the
// last reason their process exited.
func (r *Runtime) Ready(ctx context.Context) error {
	for {
		r.mu.Lock()
		var notReady []error
		for _, name := range r.functionNamesLocked() {
			for _, s := range r.functions[name].slots {
				if !s.ready {
					notReady = append(notReady, fmt.Errorf("%s instance %d: %s", name, s.index, s.lastExitOr("starting")))
				}
			}
		}
		wake := r.readyWake
		r.mu.Unlock()
		if len(notReady) == 0 {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return fmt.Errorf("lambda runtime not ready: %w", errors.Join(append([]error{ctx.Err()}, notReady...)...))
		}
	}
}

// Stop fails queued invocations with ErrStopped, sends SIGTERM to every
// process group, sends SIGKILL after Options.StopGrace, and waits until
// every process has exited and every asynchronous invocation has ended.
// Invocations running at that moment fail with Runtime.ExitError. Stop is
// idempotent; the Runtime cannot be restarted.
func (r *Runtime) Stop() error {
	r.mu.Lock()
	if r.stopping {
		r.mu.Unlock()
		r.wg.Wait()
		return nil
	}
	r.stopping = true
	r.cancelStopCtx()
	var procs []*process
	var pids []int
	for _, fn := range r.functions {
		for _, inv := range fn.pending {
			r.finishLocked(fn, inv, outcome{err: ErrStopped})
		}
		fn.pending = nil
		for _, s := range fn.slots {
			if s.proc != nil {
				procs = append(procs, s.proc)
				pids = append(pids, s.proc.pid) // 0 if not started yet: runProcess then kills it
			}
		}
	}
	r.mu.Unlock()

	for _, pid := range pids {
		signalGroup(pid, sigTerm)
	}
	grace, cancel := context.WithTimeout(context.Background(), r.opts.StopGrace)
	defer cancel()
	for _, p := range procs {
		select {
		case <-p.gone:
		case <-grace.Done():
		}
	}
	// SIGKILL every group, including those whose leader already exited:
	// a child that ignored SIGTERM may still hold the group.
	for _, pid := range pids {
		signalGroup(pid, sigKill)
	}
	r.wg.Wait()

	var errs []error
	r.mu.Lock()
	for _, fn := range r.functions {
		if err := fn.logs.close(); err != nil {
			errs = append(errs, fmt.Errorf("close log of %s: %w", fn.cfg.Name, err))
		}
	}
	r.mu.Unlock()
	return errors.Join(errs...)
}

// Stats returns a snapshot of every function's counters, by function name.
func (r *Runtime) Stats() map[string]FunctionStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]FunctionStats, len(r.functions))
	for name, fn := range r.functions {
		st := fn.stats
		st.MemoryMB = fn.cfg.MemoryMB
		st.LogEvents, st.LogBytes = fn.logs.counts()
		st.Busy = fn.busy
		st.Idle = len(fn.idle)
		st.Queued = len(fn.pending)
		st.PIDs = nil
		for _, s := range fn.slots {
			if s.proc != nil && s.proc.pid != 0 {
				st.PIDs = append(st.PIDs, s.proc.pid)
			}
		}
		sort.Ints(st.PIDs)
		out[name] = st
	}
	return out
}

// Invoke runs one invocation synchronously (InvocationType RequestResponse)
// and implements invoke.Invoker. function is a name, a qualified name or a
// function ARN; the qualifier is ignored since only $LATEST exists locally.
//
// The invocation waits, in arrival order, for a free process of the
// function (before Start, until its processes are up): that wait is what
// bounds concurrency. A function error, crash (Runtime.ExitError) or
// timeout (Sandbox.Timedout) is a Result with FunctionError "Unhandled",
// never a Go error. The error return is for an
// unknown function (ErrFunctionNotFound), a stopped runtime (ErrStopped) or
// ctx ending: a queued invocation is then withdrawn, a running one
// completes in its process and its result is dropped.
func (r *Runtime) Invoke(ctx context.Context, function string, payload []byte) (invoke.Result, error) {
	return r.invoke(ctx, function, newRequestID(), payload)
}

func (r *Runtime) invoke(ctx context.Context, function, requestID string, payload []byte) (invoke.Result, error) {
	name := functionName(function)
	inv := newInvocation(requestID, payload)

	r.mu.Lock()
	fn := r.functions[name]
	switch {
	case fn == nil:
		r.mu.Unlock()
		return invoke.Result{}, fmt.Errorf("invoke %s: %w", name, ErrFunctionNotFound)
	case r.stopping:
		r.mu.Unlock()
		return invoke.Result{}, fmt.Errorf("invoke %s: %w", name, ErrStopped)
	}
	r.enqueueLocked(fn, inv)
	r.mu.Unlock()

	select {
	case <-inv.done:
	case <-ctx.Done():
		r.mu.Lock()
		withdrawn := r.withdrawLocked(fn, inv)
		r.mu.Unlock()
		if withdrawn {
			return invoke.Result{}, fmt.Errorf("invoke %s: %w", name, ctx.Err())
		}
		select {
		case <-inv.done: // it finished while we looked
		default:
			return invoke.Result{}, fmt.Errorf("invoke %s: request %s still running: %w", name, inv.id, ctx.Err())
		}
	}
	if inv.outcome.err != nil {
		return invoke.Result{}, fmt.Errorf("invoke %s: %w", name, inv.outcome.err)
	}
	return inv.outcome.result, nil
}

func (r *Runtime) functionNamesLocked() []string {
	names := make([]string, 0, len(r.functions))
	for name := range r.functions {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// markReadyLocked marks p's slot ready once p has polled /next and its pid
// is known. The child may poll before Start has returned its pid to the
// runtime (a busy machine); a slot marked ready then had a process that
// Stats did not list yet, and a caller of Ready could see fewer PIDs than
// slots.
func (r *Runtime) markReadyLocked(p *process) {
	if !p.polled || p.pid == 0 || p.slot.ready {
		return
	}
	p.slot.ready = true
	r.notifyReadyLocked()
}

// notifyReadyLocked wakes Ready callers.
func (r *Runtime) notifyReadyLocked() {
	close(r.readyWake)
	r.readyWake = make(chan struct{})
}

// functionARN is the unqualified ARN of a function in the local cloud.
func functionARN(name string) string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", Region, AccountID, name)
}
