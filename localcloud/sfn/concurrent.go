package sfn

import (
	"github.com/clubdev/club/localcloud/sfn/asl"
)

// parallel runs every branch on its own goroutine with the same input. The
// first branch to fail aborts the others, and its error is the state's.
func (r *runner) parallel(c *stateRun, input any) (any, *asl.Error) {
	eff, err := c.effectiveInput(input)
	if err != nil {
		return nil, err
	}
	r.emit(EventParallelStarted, EventDetails{})
	scope := r.scope.child()
	defer scope.release()
	tag := r.x.nextTag()
	results := make([]any, len(c.st.Branches))
	for i, b := range c.st.Branches {
		r.spawn(scope, tag, i, nil, b, eff)
	}
	var first *asl.Error
	for remaining := len(results); remaining > 0; {
		m := r.w.next()
		if m.kind != wakeChildDone || m.tag != tag {
			continue
		}
		remaining--
		switch {
		case m.failure == nil:
			results[m.index] = m.value
		case first == nil && m.failure != errAborted:
			first = m.failure
			scope.abort()
		}
	}
	if r.scope.aborted() {
		return nil, errAborted
	}
	if first != nil {
		c.failed = &failedEvent{typ: EventParallelFailed, err: first}
		return nil, first
	}
	r.emit(EventParallelSucceeded, EventDetails{})
	return results, nil
}

// failedEvent is the ParallelStateFailed or MapStateFailed event of a
// failed attempt. withRetry records it only once the failure is final
// (caught or propagated): AWS's history of a retried Map or Parallel state
// has none between its attempts, only a new ...StateStarted.
type failedEvent struct {
	typ string
	err *asl.Error
}

// recordFailure emits the pending failed event of the attempt, if any.
func (r *runner) recordFailure(c *stateRun) {
	if f := c.failed; f != nil {
		c.failed = nil
		r.emit(f.typ, EventDetails{Error: f.err.Name, Cause: f.err.Cause})
	}
}

// spawn runs a branch or iteration on a new goroutine that reports to r.
func (r *runner) spawn(scope *cancelScope, tag uint64, index int, item *mapItem, m *asl.Machine, input any) {
	child := r.x.newRunner(scope, r)
	if item != nil {
		child.item = item
	}
	act := r.x.svc.act
	act.Hold()
	go func() {
		defer act.Release()
		out, err := child.runMachine(m, input)
		child.close()
		r.w.post(wake{kind: wakeChildDone, tag: tag, index: index, value: out, failure: err})
	}()
}

// mapState runs the iteration machine once per item of ItemsPath, at most
// MaxConcurrency at a time (0: no limit), and collects the outputs in item
// order. The first failed iteration aborts the others.
func (r *runner) mapState(c *stateRun, input any) (any, *asl.Error) {
	st := c.st
	eff, err := c.effectiveInput(input)
	if err != nil {
		return nil, err
	}
	itemsV, perr := st.ItemsPath.Apply(c.scope(eff), "ItemsPath")
	if perr != nil {
		return nil, toASLError(perr)
	}
	items, ok := itemsV.([]any)
	if !ok {
		return nil, asl.Runtimef("Items of the Map state %q must be an array, got %s", st.Name, asl.EncodeJSON(itemsV))
	}
	limit := int(st.MaxConcurrency)
	if st.MaxConcurrencyPath != nil {
		v, found := c.scope(eff).Get(st.MaxConcurrencyPath)
		n, isInt := asl.ToInt(v)
		if !found || !isInt || n < 0 {
			return nil, asl.Runtimef("MaxConcurrencyPath %s does not reference a non-negative integer", st.MaxConcurrencyPath)
		}
		limit = int(n)
	}
	length := len(items)
	r.emit(EventMapStateStarted, EventDetails{Length: &length})
	scope := r.scope.child()
	defer scope.release()
	tag := r.x.nextTag()
	results := make([]any, len(items))
	var first *asl.Error
	next, running := 0, 0
	launch := func() {
		for next < len(items) && (limit == 0 || running < limit) && first == nil && !scope.aborted() {
			i := next
			next++
			item := &mapItem{index: i, value: items[i]}
			iterInput := items[i]
			if st.ItemSelector != nil {
				ic := *c
				ic.item = item
				v, serr := st.ItemSelector.Eval(ic.scope(eff))
				if serr != nil {
					first = toASLError(serr)
					scope.abort()
					return
				}
				iterInput = v
			}
			index := i
			r.emit(EventMapIterationStarted, EventDetails{Name: st.Name, Index: &index})
			r.spawn(scope, tag, i, item, st.Iterator, iterInput)
			running++
		}
	}
	launch()
	for running > 0 {
		m := r.w.next()
		if m.kind != wakeChildDone || m.tag != tag {
			continue
		}
		running--
		index := m.index
		switch {
		case m.failure == nil:
			results[m.index] = m.value
			r.emit(EventMapIterationSucceeded, EventDetails{Name: st.Name, Index: &index})
		case m.failure == errAborted:
			r.emit(EventMapIterationAborted, EventDetails{Name: st.Name, Index: &index})
		default:
			r.emit(EventMapIterationFailed, EventDetails{Name: st.Name, Index: &index})
			if first == nil {
				first = m.failure
				scope.abort()
			}
		}
		launch()
	}
	if r.scope.aborted() {
		return nil, errAborted
	}
	if first != nil {
		c.failed = &failedEvent{typ: EventMapStateFailed, err: first}
		return nil, first
	}
	r.emit(EventMapStateSucceeded, EventDetails{})
	return results, nil
}
