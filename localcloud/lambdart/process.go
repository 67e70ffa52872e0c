package lambdart

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/clubdev/club/localcloud/invoke"
)

// Restart policy. A process that served at least one /next and then died is
// restarted after restartDelay. One that dies before its first /next is
// crashing on start: its restarts back off exponentially from
// crashBackoffMin to crashBackoffMax, and the log says so once it has
// happened crashLoopReport times in a row.
const (
	restartDelay     = 50 * time.Millisecond
	crashBackoffMin  = 100 * time.Millisecond
	crashBackoffMax  = 5 * time.Second
	crashLoopReport  = 3
	logDrainTimeout  = time.Second
	defaultPATH      = "/usr/local/bin:/usr/bin:/bin"
	runtimeAPIPrefix = "/_runtime/"
)

// afterStart, when set (by tests), runs after a process has started and
// before the runtime records its pid: the window in which the process may
// already poll /next.
var afterStart func()

// process is one OS process of a function. Fields after gone are guarded by
// Runtime.mu.
type process struct {
	fn   *function
	slot *slot
	id   string
	cmd  *exec.Cmd
	gone chan struct{} // closed once the process has exited and was reaped

	pid       int
	exited    bool
	polled    bool             // has called /next at least once
	waiting   chan *invocation // set while blocked in /next (buffered, 1)
	current   *invocation      // the invocation it holds
	recycled  bool             // killed by the runtime after a timeout
	initError *invoke.Result   // reported through /init/error
}

// superviseLocked starts one supervisor per slot of fn.
func (r *Runtime) superviseLocked(fn *function) {
	for _, s := range fn.slots {
		r.wg.Add(1)
		go r.supervise(fn, s)
	}
}

// supervise keeps one process running in slot s until Stop.
func (r *Runtime) supervise(fn *function, s *slot) {
	defer r.wg.Done()
	for first := true; ; first = false {
		if r.stopCtx.Err() != nil {
			return
		}
		if !first {
			r.mu.Lock()
			fn.stats.Restarts++
			r.mu.Unlock()
		}
		delay, err := r.runProcess(fn, s)
		if err != nil {
			fn.logs.system("[lambdart] instance %d: %v; retrying in %v", s.index, err, delay)
		}
		select {
		case <-time.After(delay):
		case <-r.stopCtx.Done():
			return
		}
	}
}

// runProcess starts one process in slot s, waits for it to exit, settles
// what it held and returns how long to wait before the next start.
func (r *Runtime) runProcess(fn *function, s *slot) (time.Duration, error) {
	p := &process{fn: fn, slot: s, id: newInstanceID(), gone: make(chan struct{})}
	p.cmd = exec.Command(fn.cfg.Binary)
	p.cmd.Dir = filepath.Dir(fn.cfg.Binary)
	p.cmd.Env = r.processEnv(fn, p.id)
	setProcessGroup(p.cmd)

	// Our own pipe rather than an io.Writer: then Wait returns when the
	// process exits, not when every child holding the pipe has gone too.
	logR, logW, err := os.Pipe()
	if err != nil {
		return crashBackoffMax, fmt.Errorf("create log pipe: %w", err)
	}
	p.cmd.Stdout, p.cmd.Stderr = logW, logW

	// Register before starting: the process may poll /next at once.
	r.mu.Lock()
	if r.stopping {
		r.mu.Unlock()
		logR.Close()
		logW.Close()
		return 0, nil
	}
	fn.procs[p.id] = p
	s.proc = p
	r.mu.Unlock()

	startErr := p.cmd.Start()
	logW.Close() // the child has its copy
	if startErr != nil {
		logR.Close()
		r.mu.Lock()
		delete(fn.procs, p.id)
		s.proc = nil
		s.failures++
		s.lastExit = startErr.Error()
		fn.initFailure = initFailure{errorType: errorTypeEntrypoint, reason: startErr.Error()}
		r.failIfCannotStartLocked(fn)
		delay := crashBackoff(s.failures)
		r.mu.Unlock()
		close(p.gone)
		return delay, fmt.Errorf("start %s: %w", fn.cfg.Binary, startErr)
	}
	if afterStart != nil {
		afterStart()
	}
	r.mu.Lock()
	p.pid = p.cmd.Process.Pid
	r.markReadyLocked(p) // it may have polled /next before Start returned
	if r.stopping {
		// Stop ran between registration and start and could not signal it.
		signalGroup(p.pid, sigKill)
	}
	r.mu.Unlock()

	drained := make(chan struct{})
	go func() {
		defer close(drained)
		fn.logs.copyFrom(logR)
	}()

	waitErr := p.cmd.Wait()
	// The sandbox ends with its runtime: nothing it started may outlive it.
	signalGroup(p.pid, sigKill)
	select {
	case <-drained:
	case <-time.After(logDrainTimeout): // a child escaped the group and holds the pipe
	}
	logR.Close()
	return r.processExited(fn, s, p, waitErr), nil
}

// processExited settles the state a dead process leaves behind and returns
// the delay before its slot starts the next one.
func (r *Runtime) processExited(fn *function, s *slot, p *process, waitErr error) time.Duration {
	reason := exitReason(waitErr)

	r.mu.Lock()
	defer r.mu.Unlock()
	p.exited = true
	close(p.gone)
	delete(fn.procs, p.id)
	if i := indexOf(fn.idle, p); i >= 0 {
		fn.idle = append(fn.idle[:i], fn.idle[i+1:]...)
	}
	p.waiting = nil
	s.proc = nil
	s.lastExit = reason

	if inv := p.current; inv != nil {
		msg := fmt.Sprintf("RequestId: %s Error: %s", inv.id, reason)
		r.finishLocked(fn, inv, outcome{result: errorResult(errorTypeExit, msg)})
	}

	switch {
	case r.stopping:
		return 0
	case p.recycled:
		return 0 // killed by us after a timeout: replace it at once
	}
	fn.stats.Crashes++
	if p.polled {
		s.failures = 0
		fn.logs.system("[lambdart] instance %d (pid %d) %s; restarting", s.index, p.pid, reason)
		return restartDelay
	}

	s.failures++
	fn.initFailure = initFailure{errorType: errorTypeExit, reason: reason, reported: p.initError}
	r.failIfCannotStartLocked(fn)
	delay := crashBackoff(s.failures)
	if s.failures >= crashLoopReport {
		fn.logs.system("[lambdart] instance %d crashes on start (%d times in a row, last: %s); next attempt in %v",
			s.index, s.failures, reason, delay)
	} else {
		fn.logs.system("[lambdart] instance %d (pid %d) %s during init; restarting in %v", s.index, p.pid, reason, delay)
	}
	return delay
}

func crashBackoff(failures int) time.Duration {
	d := crashBackoffMin
	for i := 1; i < failures && d < crashBackoffMax; i++ {
		d *= 2
	}
	return min(d, crashBackoffMax)
}

// exitReason words an exit the way Lambda does in Runtime.ExitError.
func exitReason(waitErr error) string {
	var exitErr *exec.ExitError
	switch {
	case waitErr == nil:
		return "Runtime exited without providing a reason"
	case errors.As(waitErr, &exitErr):
		return "Runtime exited with error: " + exitErr.Error() // "exit status 2", "signal: killed"
	default:
		return "Runtime exited with error: " + waitErr.Error()
	}
}

func indexOf(ps []*process, p *process) int {
	for i, q := range ps {
		if q == p {
			return i
		}
	}
	return -1
}

// processEnv is the environment of one process: a minimal base (the host's
// environment is not inherited, so a developer's AWS_PROFILE can never
// reach real AWS), then Options.Env, the function's Env, and last the
// variables Lambda itself sets, which functions cannot override.
func (r *Runtime) processEnv(fn *function, instanceID string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = defaultPATH
	}
	env := map[string]string{
		"PATH": path,
		"LANG": "en_US.UTF-8",
	}
	for k, v := range r.opts.Env {
		env[k] = v
	}
	for k, v := range fn.cfg.Env {
		env[k] = v
	}
	name := fn.cfg.Name
	reserved := map[string]string{
		"AWS_LAMBDA_RUNTIME_API":          r.opts.RuntimeAPIHost + runtimeAPIPrefix + name + "/" + instanceID,
		"AWS_LAMBDA_FUNCTION_NAME":        name,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(fn.cfg.MemoryMB),
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_INITIALIZATION_TYPE":  "on-demand",
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + name,
		"AWS_LAMBDA_LOG_STREAM_NAME":      time.Now().UTC().Format("2006/01/02") + "/[$LATEST]" + instanceID,
		"AWS_REGION":                      Region,
		"AWS_DEFAULT_REGION":              Region,
		"_HANDLER":                        "bootstrap",
		"LAMBDA_TASK_ROOT":                filepath.Dir(fn.cfg.Binary),
		"TZ":                              ":UTC",
	}
	for k, v := range reserved {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
