package lambdart

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/clubdev/club/localcloud/invoke"
)

// Lambda's error types for failures the runtime itself detects.
const (
	errorTypeExit          = "Runtime.ExitError"
	errorTypeEntrypoint    = "Runtime.InvalidEntrypoint"
	errorTypeTimeout       = "Sandbox.Timedout"
	errorTypeResponseSize  = "Function.ResponseSizeTooLarge"
	functionErrorUnhandled = "Unhandled"
)

// function is the dispatch state of one function. Every field after cfg
// and logs is guarded by Runtime.mu.
type function struct {
	cfg  FunctionConfig
	arn  string
	logs *logSink

	slots   []*slot
	procs   map[string]*process // live processes by instance id
	pending []*invocation       // queued invocations, oldest first
	idle    []*process          // processes blocked in /next, longest waiting first
	busy    int                 // processes holding an invocation
	stats   FunctionStats       // counters only; gauges are filled by Stats
	// initFailure is why the latest process to die before its first
	// /next did so.
	initFailure initFailure
}

// initFailure describes a process that never became ready.
type initFailure struct {
	errorType string         // Runtime.ExitError, or Runtime.InvalidEntrypoint if it did not even start
	reason    string         // "Runtime exited with error: exit status 4", ...
	reported  *invoke.Result // what the runtime posted to /init/error, if anything
}

func (f initFailure) result(requestID string) invoke.Result {
	if f.reported != nil {
		return *f.reported
	}
	return errorResult(f.errorType, fmt.Sprintf("RequestId: %s Error: %s", requestID, f.reason))
}

// cannotStartLocked reports whether the latest process of every slot died
// before its first /next: the function cannot serve now. On AWS each
// invocation would fail its own init, so here invocations fail with the
// init failure instead of waiting for a process that may never come.
func (fn *function) cannotStartLocked() bool {
	for _, s := range fn.slots {
		if s.failures == 0 {
			return false
		}
	}
	return len(fn.slots) > 0
}

// failIfCannotStartLocked fails every queued invocation with the init
// failure if the function cannot start.
func (r *Runtime) failIfCannotStartLocked(fn *function) {
	if !fn.cannotStartLocked() {
		return
	}
	for _, inv := range fn.pending {
		r.finishLocked(fn, inv, outcome{result: fn.initFailure.result(inv.id)})
	}
	fn.pending = nil
}

// slot is one unit of concurrency: it always has at most one process, which
// its supervisor replaces when it exits.
type slot struct {
	index    int
	proc     *process // nil between an exit and the next start
	ready    bool     // some process of this slot has polled /next, its pid known
	failures int      // consecutive exits before the first /next
	lastExit string
}

func (s *slot) lastExitOr(def string) string {
	if s.lastExit == "" {
		return def
	}
	return s.lastExit
}

func newFunction(cfg FunctionConfig, logs *logSink) *function {
	fn := &function{
		cfg:   cfg,
		arn:   functionARN(cfg.Name),
		logs:  logs,
		procs: map[string]*process{},
	}
	for i := range cfg.Concurrency {
		fn.slots = append(fn.slots, &slot{index: i})
	}
	return fn
}

// invocation is one request to a function. Its fields after payload are
// guarded by Runtime.mu until done is closed, and read-only afterwards.
type invocation struct {
	id      string
	payload []byte
	traceID string

	proc     *process // the process running it, once dispatched
	started  time.Time
	deadline time.Time
	timer    *time.Timer
	outcome  outcome
	done     chan struct{} // closed by finishLocked
}

// outcome is how an invocation ended: a result, or an infrastructure error
// (the runtime stopped before it ran).
type outcome struct {
	result invoke.Result
	err    error
}

func newInvocation(id string, payload []byte) *invocation {
	return &invocation{id: id, payload: payload, traceID: newTraceID(), done: make(chan struct{})}
}

// enqueueLocked hands inv to the process that has waited longest, or queues
// it until a process asks for work (failing it at once if none can start).
func (r *Runtime) enqueueLocked(fn *function, inv *invocation) {
	if len(fn.idle) == 0 {
		fn.pending = append(fn.pending, inv)
		r.failIfCannotStartLocked(fn)
		return
	}
	p := fn.idle[0]
	fn.idle = fn.idle[1:]
	ch := p.waiting
	p.waiting = nil
	r.dispatchLocked(fn, p, inv)
	ch <- inv // buffered: never blocks
}

// dispatchLocked makes p the holder of inv and arms the timeout, which
// counts from this moment as on AWS.
func (r *Runtime) dispatchLocked(fn *function, p *process, inv *invocation) {
	now := time.Now()
	inv.proc = p
	inv.started = now
	inv.deadline = now.Add(fn.cfg.Timeout)
	inv.timer = time.AfterFunc(fn.cfg.Timeout, func() { r.expire(fn, p, inv) })
	p.current = inv
	fn.busy++
	fn.stats.MaxConcurrency = max(fn.stats.MaxConcurrency, fn.busy)
	fn.logs.system("START RequestId: %s Version: $LATEST", inv.id)
}

// withdrawLocked removes a queued invocation whose caller gave up. It
// reports false if the invocation already runs or ended.
func (r *Runtime) withdrawLocked(fn *function, inv *invocation) bool {
	i := slices.Index(fn.pending, inv)
	if i < 0 {
		return false
	}
	fn.pending = slices.Delete(fn.pending, i, i+1)
	return true
}

// finishLocked ends inv exactly once: it releases the process holding it,
// counts it and wakes the caller. Every path that ends an invocation
// (response, error, crash, timeout, stop) goes through here after checking
// it still owns inv, so an invocation can never end twice.
func (r *Runtime) finishLocked(fn *function, inv *invocation, o outcome) {
	if inv.timer != nil {
		inv.timer.Stop()
	}
	if p := inv.proc; p != nil {
		p.current = nil
		fn.busy--
		status := ""
		switch {
		case o.result.Failed() && errorTypeOf(o.result) == errorTypeTimeout:
			status = "\tStatus: timeout"
		case o.result.Failed():
			status = "\tStatus: error"
		}
		fn.logs.system("END RequestId: %s", inv.id)
		took := time.Since(inv.started)
		billed := uint64((took + time.Millisecond - 1) / time.Millisecond)
		fn.stats.BilledMs += billed
		fn.logs.system("REPORT RequestId: %s\tDuration: %.2f ms\tBilled Duration: %d ms\tMemory Size: %d MB%s",
			inv.id, float64(took.Microseconds())/1000, billed, fn.cfg.MemoryMB, status)
	}
	if o.err == nil {
		fn.stats.Invocations++
		if o.result.Failed() {
			fn.stats.Errors++
		}
	}
	inv.outcome = o
	close(inv.done)
}

// expire is the timeout of inv on p: the invocation fails with
// Sandbox.Timedout and the process is killed, as AWS recycles the sandbox
// of a timed-out function; its supervisor then starts a fresh one.
func (r *Runtime) expire(fn *function, p *process, inv *invocation) {
	r.mu.Lock()
	if p.current != inv {
		r.mu.Unlock()
		return // it ended first
	}
	p.recycled = true
	pid := p.pid
	fn.stats.Timeouts++
	msg := fmt.Sprintf("RequestId: %s Error: Task timed out after %.2f seconds", inv.id, fn.cfg.Timeout.Seconds())
	fn.logs.system("%s %s", inv.id, msg)
	r.finishLocked(fn, inv, outcome{result: errorResult(errorTypeTimeout, msg)})
	r.mu.Unlock()
	signalGroup(pid, sigKill)
}

// errorResult builds the error document Lambda returns for failures the
// runtime detects itself.
func errorResult(errorType, message string) invoke.Result {
	doc, _ := json.Marshal(invoke.ErrorInfo{ErrorMessage: message, ErrorType: errorType}) // cannot fail
	return invoke.Result{Payload: doc, FunctionError: functionErrorUnhandled}
}

func errorTypeOf(res invoke.Result) string { return res.Error().ErrorType }

// functionName extracts the function name from a name, a qualified name
// ("name:alias"), a partial ARN ("123456789012:function:name") or a full
// ARN, as the Invoke API accepts them.
func functionName(s string) string {
	if i := strings.Index(s, ":function:"); i >= 0 {
		s = s[i+len(":function:"):]
	}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	return s
}

func newRequestID() string { return uuid.NewString() }

// newTraceID returns an X-Ray trace header for the invocation; nothing
// samples it locally, but SDK clients propagate it.
func newTraceID() string {
	var b [20]byte
	_, _ = rand.Read(b[:]) // never fails
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0",
		time.Now().Unix(), hex.EncodeToString(b[:12]), hex.EncodeToString(b[12:]))
}

// newInstanceID names one process, like the sandbox id in a Lambda log
// stream name.
func newInstanceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails
	return hex.EncodeToString(b[:])
}
