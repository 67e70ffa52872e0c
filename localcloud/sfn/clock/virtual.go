package clock

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// Virtual is a clock whose time moves only when told to. The zero value is
// not usable; call NewVirtual.
type Virtual struct {
	mu     sync.Mutex
	now    time.Time
	timers timerHeap
	seq    uint64
	holds  int
	auto   bool
	kick   chan struct{} // wakes the auto-advance loop; capacity 1
	stop   chan struct{} // closed to end the auto-advance loop
	idle   chan struct{} // closed when the hold count next reaches zero
}

var _ Clock = (*Virtual)(nil)

// NewVirtual returns a clock that reads start until it is advanced.
func NewVirtual(start time.Time) *Virtual {
	return &Virtual{now: start, kick: make(chan struct{}, 1)}
}

// Now returns the virtual time.
func (v *Virtual) Now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.now
}

// AfterFunc schedules f at Now()+d. f runs in the goroutine that advances the
// clock past that instant, after the clock's own lock is released.
func (v *Virtual) AfterFunc(d time.Duration, f func()) Timer {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seq++
	t := &virtualTimer{clock: v, when: v.now.Add(max(d, 0)), seq: v.seq, f: f, index: -1}
	heap.Push(&v.timers, t)
	v.kickLocked()
	return t
}

// After returns a channel that receives the virtual time once d has elapsed.
func (v *Virtual) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	v.AfterFunc(d, func() { ch <- v.Now() })
	return ch
}

// Advance moves time forward by d, firing every timer that falls due, in
// order, with Now() reading each timer's deadline while its callback runs.
func (v *Virtual) Advance(d time.Duration) {
	v.mu.Lock()
	target := v.now.Add(d)
	v.mu.Unlock()
	v.AdvanceTo(target)
}

// AdvanceTo moves time forward to t (never backwards), firing due timers.
func (v *Virtual) AdvanceTo(t time.Time) {
	for v.fireNext(t) {
	}
	v.mu.Lock()
	if t.After(v.now) {
		v.now = t
	}
	v.mu.Unlock()
}

// fireNext fires the earliest timer due at or before limit and reports
// whether there was one.
func (v *Virtual) fireNext(limit time.Time) bool {
	v.mu.Lock()
	if len(v.timers) == 0 || v.timers[0].when.After(limit) {
		v.mu.Unlock()
		return false
	}
	t := heap.Pop(&v.timers).(*virtualTimer)
	if t.when.After(v.now) {
		v.now = t.when
	}
	v.mu.Unlock()
	t.f()
	return true
}

// Pending returns the number of timers not yet fired or stopped.
func (v *Virtual) Pending() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.timers)
}

// Hold records that a unit of work is running, which keeps AutoAdvance from
// moving time.
func (v *Virtual) Hold() {
	v.mu.Lock()
	v.holds++
	v.mu.Unlock()
}

// Release ends a Hold. When the last hold is released and AutoAdvance is
// on, time jumps to the next timer.
func (v *Virtual) Release() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.holds--
	if v.holds < 0 {
		panic("clock: Release without Hold")
	}
	if v.holds == 0 {
		v.kickLocked()
		if v.idle != nil {
			close(v.idle)
			v.idle = nil
		}
	}
}

// WaitIdle blocks until no hold is active, that is until every goroutine
// the clock tracks is blocked, or ctx is done. Tests that advance time by
// hand call it first so that the timers they mean to fire are armed.
func (v *Virtual) WaitIdle(ctx context.Context) error {
	for {
		v.mu.Lock()
		if v.holds == 0 {
			v.mu.Unlock()
			return nil
		}
		if v.idle == nil {
			v.idle = make(chan struct{})
		}
		idle := v.idle
		v.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (v *Virtual) kickLocked() {
	if !v.auto {
		return
	}
	select {
	case v.kick <- struct{}{}:
	default:
	}
}

// AutoAdvance makes time jump to the next pending timer whenever no hold is
// active, until the returned function is called. Calling AutoAdvance while it
// is already on returns a no-op stop function.
func (v *Virtual) AutoAdvance() (stop func()) {
	v.mu.Lock()
	if v.auto {
		v.mu.Unlock()
		return func() {}
	}
	v.auto = true
	v.stop = make(chan struct{})
	stopCh := v.stop
	v.kickLocked()
	v.mu.Unlock()
	done := make(chan struct{})
	go v.autoLoop(stopCh, done)
	var once sync.Once
	return func() {
		once.Do(func() {
			v.mu.Lock()
			v.auto = false
			close(stopCh)
			v.mu.Unlock()
			<-done
		})
	}
}

func (v *Virtual) autoLoop(stop, done chan struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case <-v.kick:
		}
		for {
			v.mu.Lock()
			if !v.auto || v.holds > 0 || len(v.timers) == 0 {
				v.mu.Unlock()
				break
			}
			t := heap.Pop(&v.timers).(*virtualTimer)
			if t.when.After(v.now) {
				v.now = t.when
			}
			v.mu.Unlock()
			// The callback wakes someone, who is then held on its behalf
			// before the loop looks at the hold count again.
			t.f()
		}
	}
}

type virtualTimer struct {
	clock *Virtual
	when  time.Time
	seq   uint64
	f     func()
	index int // position in the heap, -1 once popped or removed
}

// Stop removes the timer if it has not fired.
func (t *virtualTimer) Stop() bool {
	v := t.clock
	v.mu.Lock()
	defer v.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&v.timers, t.index)
	return true
}

type timerHeap []*virtualTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].when.Equal(h[j].when) {
		return h[i].seq < h[j].seq
	}
	return h[i].when.Before(h[j].when)
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *timerHeap) Push(x any) {
	t := x.(*virtualTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	n := len(old)
	t := old[n-1]
	old[n-1] = nil
	t.index = -1
	*h = old[:n-1]
	return t
}
