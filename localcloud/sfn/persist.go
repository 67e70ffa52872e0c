package sfn

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/clubdev/club/localcloud/sfn/asl"
)

// Journal keeps a Service's executions across a restart of the local cloud
// (the state directory of `make run`). The Service calls Record, in order
// per execution, with: the start (what the execution runs, on what input),
// every history event, every resume point of its top-level states and its
// end. Record must not call the Service back.
type Journal interface {
	Record(JournalEntry)
}

// Journal entry kinds.
const (
	EntryStart  = "start"
	EntryEvent  = "event"
	EntryPoint  = "point"
	EntryFinish = "finish"
)

// JournalEntry is one thing a Journal keeps; Kind says which field is set.
type JournalEntry struct {
	Kind      string        `json:"kind"`
	Execution string        `json:"execution"`
	Start     *StartRecord  `json:"start,omitempty"`
	Event     *EventRecord  `json:"event,omitempty"`
	Point     *ResumePoint  `json:"point,omitempty"`
	Finish    *FinishRecord `json:"finish,omitempty"`
}

// StartRecord is what an execution runs: the definition it started with
// (a later change of the machine does not change it), its name and input.
type StartRecord struct {
	StateMachine string    `json:"state_machine"`
	MachineName  string    `json:"machine_name"`
	Definition   string    `json:"definition"`
	RoleArn      string    `json:"role_arn"`
	Name         string    `json:"name"`
	Input        string    `json:"input"`
	StartDate    time.Time `json:"start_date"`
}

// EventRecord is a history event.
type EventRecord struct {
	ID        int64        `json:"id"`
	Previous  int64        `json:"previous"`
	Timestamp time.Time    `json:"timestamp"`
	Type      string       `json:"type"`
	Details   EventDetails `json:"details"`
}

// ResumePoint is where an execution's top-level run stands: the state it
// entered, with its input, and what it waits for there — a Wait state's end,
// a callback task's token and deadline. A resumed execution carries on from
// its last point: a Wait waits what is left (nothing if its end passed
// while the local cloud was stopped), a callback task waits for the same
// token until the same deadline (timing out at once if it passed), any
// other state runs again (its Lambda functions are invoked again: an
// invocation the stop cut short has no known outcome).
type ResumePoint struct {
	State    string    `json:"state"`
	Input    string    `json:"input"`
	Entered  time.Time `json:"entered"`
	Until    time.Time `json:"until,omitzero"`
	Token    string    `json:"token,omitempty"`
	Deadline time.Time `json:"deadline,omitzero"`

	// tag is the wait the token was registered for by Restore, so that a
	// callback arriving before the execution's goroutine runs is kept.
	tag uint64
}

// FinishRecord is how an execution ended.
type FinishRecord struct {
	Status   string    `json:"status"`
	Output   string    `json:"output,omitempty"`
	Error    string    `json:"error,omitempty"`
	Cause    string    `json:"cause,omitempty"`
	StopDate time.Time `json:"stop_date"`
}

// SetJournal makes the Service report to j from now on; call it before
// any execution starts.
func (s *Service) SetJournal(j Journal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.journal = j
}

func (s *Service) record(e JournalEntry) {
	if s.journal != nil && !s.suspended.Load() {
		s.journal.Record(e)
	}
}

// Suspend stops every running execution without ending it: nothing more is
// recorded in its history or the journal, so that a Service restored from
// the journal resumes it. It then works as Close.
func (s *Service) Suspend() {
	s.suspended.Store(true)
	s.Close()
}

// Restore puts back the executions a journal kept, entries in the order
// they were recorded, and resumes those still running from their last
// resume point. Call it after SetJournal (resumed executions record on)
// and before new executions start. It returns how many it resumed.
func (s *Service) Restore(entries []JournalEntry) (resumed int, err error) {
	type kept struct {
		start  *StartRecord
		events []HistoryEvent
		point  *ResumePoint
		finish *FinishRecord
		order  int
	}
	byARN := map[string]*kept{}
	for i, e := range entries {
		k := byARN[e.Execution]
		if k == nil {
			k = &kept{order: i}
			byARN[e.Execution] = k
		}
		switch e.Kind {
		case EntryStart:
			k.start = e.Start
		case EntryEvent:
			if e.Event != nil {
				ev := e.Event
				k.events = append(k.events, HistoryEvent{ID: ev.ID, PreviousEventID: ev.Previous, Timestamp: ev.Timestamp, Type: ev.Type, Details: ev.Details})
			}
		case EntryPoint:
			k.point = e.Point
		case EntryFinish:
			k.finish = e.Finish
		default:
			return 0, fmt.Errorf("execution %s: unknown journal entry %q", e.Execution, e.Kind)
		}
	}
	arns := make([]string, 0, len(byARN))
	for arn, k := range byARN {
		if k.start == nil {
			return 0, fmt.Errorf("execution %s: the journal has no start for it", arn)
		}
		arns = append(arns, arn)
	}
	sort.Slice(arns, func(i, j int) bool { return byARN[arns[i]].order < byARN[arns[j]].order })

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, errors.New("the service is closed")
	}
	for _, arn := range arns {
		k := byARN[arn]
		if _, ok := s.executions[arn]; ok {
			return resumed, fmt.Errorf("execution %s: already known", arn)
		}
		sm, err := s.restoredMachine(k.start)
		if err != nil {
			return resumed, fmt.Errorf("execution %s: %w", arn, err)
		}
		value, err := asl.DecodeJSON([]byte(k.start.Input))
		if err != nil {
			return resumed, fmt.Errorf("execution %s: input: %w", arn, err)
		}
		x := newExecution(s, sm, arn, k.start.Name, k.start.Input, compactJSON(k.start.Input), value)
		x.start = k.start.StartDate
		x.events = k.events
		s.executions[arn] = x
		s.byMachine[sm.arn] = append(s.byMachine[sm.arn], x)
		if f := k.finish; f != nil {
			x.status, x.output, x.errStr, x.cause, x.stop = f.Status, f.Output, f.Error, f.Cause, f.StopDate
			x.scope.release()
			close(x.done)
			continue
		}
		r := x.newRunner(x.scope, nil)
		r.root = true
		if p := k.point; p != nil && p.Token != "" {
			p.tag = x.nextTag()
			s.tokens.register(p.Token, r.w, p.tag)
		}
		s.wg.Add(1)
		s.act.Hold()
		go x.resume(r, k.point)
		resumed++
	}
	return resumed, nil
}

// restoredMachine is the machine an execution started with: the current one
// if its definition is the same, else a copy made from the journal.
func (s *Service) restoredMachine(st *StartRecord) (*stateMachine, error) {
	if sm, ok := s.machines[st.StateMachine]; ok && sm.definition == st.Definition {
		return sm, nil
	}
	def, err := s.compile(st.Definition)
	if err != nil {
		return nil, fmt.Errorf("the definition it started with: %w", err)
	}
	return &stateMachine{arn: st.StateMachine, name: st.MachineName, definition: st.Definition, def: def,
		roleArn: st.RoleArn, typ: "STANDARD", tags: map[string]string{}}, nil
}

// resume runs a restored execution from its last resume point (from its
// first state when it has none yet).
func (x *execution) resume(r *runner, p *ResumePoint) {
	defer x.svc.wg.Done()
	defer x.svc.act.Release()
	x.mu.Lock()
	if n := len(x.events); n > 0 {
		r.lastID = x.events[n-1].ID
	}
	x.mu.Unlock()
	defer r.close()
	var timer interface{ Stop() bool }
	if t := x.sm.def.TimeoutSeconds; t > 0 {
		left := max(x.start.Add(time.Duration(t)*time.Second).Sub(x.svc.clk.Now()), time.Nanosecond)
		timer = x.svc.clk.AfterFunc(left, func() {
			x.abort(abortReason{status: StatusTimedOut, err: asl.ErrTimeout, cause: "The execution exceeded the state machine's TimeoutSeconds"})
		})
	}
	m := &x.sm.def.Machine
	var out any
	var ferr *asl.Error
	if p == nil {
		out, ferr = r.runMachine(m, x.inputValue)
	} else if st, ok := m.States[p.State]; !ok {
		ferr = asl.Runtimef("the state %q the execution stood in is not in its definition", p.State)
	} else if input, err := asl.DecodeJSON([]byte(p.Input)); err != nil {
		ferr = asl.Runtimef("the input of state %q: %v", p.State, err)
	} else {
		out, ferr = r.runMachineFrom(m, st.Name, input, p)
	}
	if timer != nil {
		timer.Stop()
	}
	x.finish(r, out, ferr)
}

// point records where the top-level run stands.
func (r *runner) point(p ResumePoint) {
	if !r.root {
		return
	}
	r.x.svc.record(JournalEntry{Kind: EntryPoint, Execution: r.x.arn, Point: &p})
}
