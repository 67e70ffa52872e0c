package sfn

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"sync"
)

// pendingTask is the receiving end of a task token.
type pendingTask struct {
	w      *waiter
	tag    uint64
	closed bool // the task has an outcome; later callbacks are refused
}

// tokenRegistry maps task tokens to waiting tasks. Closing is atomic with
// the first outcome, so a callback and a timeout can never both win.
type tokenRegistry struct {
	mu    sync.Mutex
	tasks map[string]*pendingTask
}

func newTokenRegistry() *tokenRegistry { return &tokenRegistry{tasks: map[string]*pendingTask{}} }

// newToken returns a random task token. Like AWS's, it uses the standard
// base64 alphabet, which never starts a token with "-" (a command-line
// option to the AWS CLI).
func newToken() string {
	b := make([]byte, 48)
	_, _ = rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)
}

func (r *tokenRegistry) register(token string, w *waiter, tag uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tasks[token] = &pendingTask{w: w, tag: tag}
}

// close marks the task as finished and reports whether it was still open.
func (r *tokenRegistry) close(token string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.tasks[token]
	if !ok || t.closed {
		return false
	}
	t.closed = true
	return true
}

// deliver posts a callback to the task of a token. Success and failure
// close the task; a heartbeat does not.
func (r *tokenRegistry) deliver(token string, m wake) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.tasks[token]
	if !ok {
		return apiErrorf(CodeInvalidToken, "Invalid Token: the task token is not known")
	}
	if t.closed {
		return apiErrorf(CodeTaskTimedOut, "Task Timed Out: the task token has expired or the task associated with it has already been closed")
	}
	if m.kind != wakeHeartbeat {
		t.closed = true
	}
	m.tag = t.tag
	t.w.post(m)
	return nil
}

func callbackOutput(output string) (json.RawMessage, error) {
	if !json.Valid([]byte(output)) {
		return nil, apiErrorf(CodeInvalidOutput, "Invalid Output: the output is not valid JSON")
	}
	return json.RawMessage(output), nil
}
