package sfn

import (
	"context"
	"sync"
)

// cancelScope is the cancellation of an execution or of one Parallel or Map
// state's children. Aborting a scope cancels its context and wakes every
// goroutine blocked in it or in a scope below it, so that they notice at
// once rather than at their next timer.
type cancelScope struct {
	ctx    context.Context
	cancel context.CancelFunc
	parent *cancelScope

	mu       sync.Mutex
	waiters  map[*waiter]struct{}
	children map[*cancelScope]struct{}
}

func newScope(parent context.Context) *cancelScope {
	ctx, cancel := context.WithCancel(parent)
	return &cancelScope{ctx: ctx, cancel: cancel, waiters: map[*waiter]struct{}{}, children: map[*cancelScope]struct{}{}}
}

func (s *cancelScope) child() *cancelScope {
	c := newScope(s.ctx)
	c.parent = s
	s.mu.Lock()
	s.children[c] = struct{}{}
	s.mu.Unlock()
	return c
}

// release detaches a finished child scope from its parent.
func (s *cancelScope) release() {
	s.cancel()
	if s.parent != nil {
		s.parent.mu.Lock()
		delete(s.parent.children, s)
		s.parent.mu.Unlock()
	}
}

func (s *cancelScope) add(w *waiter) {
	s.mu.Lock()
	s.waiters[w] = struct{}{}
	s.mu.Unlock()
}

func (s *cancelScope) remove(w *waiter) {
	s.mu.Lock()
	delete(s.waiters, w)
	s.mu.Unlock()
}

func (s *cancelScope) aborted() bool { return s.ctx.Err() != nil }

func (s *cancelScope) abort() {
	s.cancel()
	s.mu.Lock()
	ws := make([]*waiter, 0, len(s.waiters))
	for w := range s.waiters {
		ws = append(ws, w)
	}
	kids := make([]*cancelScope, 0, len(s.children))
	for c := range s.children {
		kids = append(kids, c)
	}
	s.mu.Unlock()
	for _, w := range ws {
		w.post(wake{kind: wakeAbort})
	}
	for _, c := range kids {
		c.abort()
	}
}
