package sfn

import (
	"encoding/json"
	"sync"

	"github.com/clubdev/club/localcloud/sfn/asl"
)

// activity is implemented by clocks that skip idle time (clock.Virtual):
// the interpreter holds while it computes and releases while it blocks.
type activity interface {
	Hold()
	Release()
}

type noActivity struct{}

func (noActivity) Hold()    {}
func (noActivity) Release() {}

// wakeKind says why a blocked interpreter goroutine was woken.
type wakeKind int

const (
	wakeTimer wakeKind = iota
	wakeHeartbeatTimer
	wakeTaskResult
	wakeCallbackSuccess
	wakeCallbackFailure
	wakeHeartbeat
	wakeChildDone
	wakeAbort
)

// wake is a message to a blocked interpreter goroutine. tag ties it to the
// wait it belongs to, so messages that arrive late (a timer that fired just
// as the task finished) are recognised and dropped.
type wake struct {
	kind    wakeKind
	tag     uint64
	output  json.RawMessage
	err     error
	index   int        // child index for wakeChildDone
	failure *asl.Error // child failure for wakeChildDone
	value   any        // child output for wakeChildDone
}

// waiter is the mailbox of one interpreter goroutine (an execution, a
// Parallel branch or a Map iteration). Whoever posts to a parked waiter
// takes a hold on its behalf before it wakes, so a virtual clock never sees
// an idle moment between the post and the goroutine running again.
type waiter struct {
	act    activity
	mu     sync.Mutex
	queue  []wake
	parked bool
	signal chan struct{}
}

func newWaiter(act activity) *waiter {
	return &waiter{act: act, signal: make(chan struct{}, 1)}
}

// post delivers a message. It never blocks.
func (w *waiter) post(m wake) {
	w.mu.Lock()
	w.queue = append(w.queue, m)
	if w.parked {
		w.parked = false
		w.act.Hold()
	}
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// next blocks until a message arrives and returns it. The calling goroutine
// must be holding; it holds again when next returns.
func (w *waiter) next() wake {
	for {
		w.mu.Lock()
		if len(w.queue) > 0 {
			m := w.queue[0]
			w.queue = w.queue[1:]
			if w.parked {
				w.parked = false
				w.act.Hold()
			}
			w.mu.Unlock()
			return m
		}
		if !w.parked {
			w.parked = true
			w.act.Release()
		}
		w.mu.Unlock()
		<-w.signal
	}
}
