package capacity

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Model is the backlog arithmetic of docs/principles.md §1.8: a backlog of Backlog
// messages, Arrival new ones per second, and a consumer (or provider) that
// completes Rate per second. The backlog is a debt that shrinks at
// Rate − Arrival per second, if at all.
type Model struct {
	Backlog float64 // messages waiting now
	Arrival float64 // messages arriving per second
	Rate    float64 // messages completed per second
}

// Validate reports every problem of m at once.
func (m Model) Validate() error {
	var errs []error
	if m.Backlog < 0 || math.IsNaN(m.Backlog) || math.IsInf(m.Backlog, 0) {
		errs = append(errs, fmt.Errorf("backlog %g must be a non-negative number", m.Backlog))
	}
	if m.Arrival < 0 || math.IsNaN(m.Arrival) || math.IsInf(m.Arrival, 0) {
		errs = append(errs, fmt.Errorf("arrival %g must be a non-negative number", m.Arrival))
	}
	if !(m.Rate > 0) || math.IsInf(m.Rate, 0) {
		errs = append(errs, fmt.Errorf("rate %g must be a positive number", m.Rate))
	}
	return errors.Join(errs...)
}

// NetRate is how fast the backlog shrinks, in messages per second
// (negative: it grows).
func (m Model) NetRate() float64 { return m.Rate - m.Arrival }

// DrainTime is how long the backlog takes to reach zero. ok is false when it
// never does (Rate ≤ Arrival with a backlog): a queue is intent, not
// capacity.
func (m Model) DrainTime() (d time.Duration, ok bool) {
	if m.Backlog == 0 {
		return 0, true
	}
	if m.NetRate() <= 0 {
		return 0, false
	}
	return seconds(m.Backlog / m.NetRate()), true
}

// WorstWait is the longest a message waits before it is taken, when
// messages are served in arrival order: the last message of the backlog
// waits Backlog/Rate, and every later one less, as the debt shrinks. It
// is unbounded (ok false) when the backlog never drains.
func (m Model) WorstWait() (d time.Duration, ok bool) {
	if m.Backlog > 0 && m.NetRate() <= 0 {
		return 0, false
	}
	return seconds(m.Backlog / m.Rate), true
}

// RateFor is the completion rate that drains the backlog within deadline
// while messages keep arriving: Arrival + Backlog/deadline.
func (m Model) RateFor(deadline time.Duration) float64 {
	return m.Arrival + m.Backlog/deadline.Seconds()
}

// Verdict is the model held against a promise.
type Verdict struct {
	Model
	Drains    bool
	DrainTime time.Duration
	// Deadline is the promise: every waiting message done within it. Zero
	// when none was given; then Holds is true and RequiredRate zero.
	Deadline time.Duration
	Holds    bool
	// RequiredRate is the rate that would keep the promise.
	RequiredRate float64
	// MaxBacklog is the largest backlog the current rate drains within the
	// deadline (0 when the rate cannot even keep up with arrivals).
	MaxBacklog float64
}

// Evaluate computes the drain time and, for a positive deadline, whether the
// promise holds and what would keep it.
func (m Model) Evaluate(deadline time.Duration) Verdict {
	v := Verdict{Model: m, Deadline: deadline}
	v.DrainTime, v.Drains = m.DrainTime()
	if deadline <= 0 {
		v.Holds = v.Drains
		return v
	}
	v.Holds = v.Drains && v.DrainTime <= deadline
	v.RequiredRate = m.RateFor(deadline)
	v.MaxBacklog = max(m.NetRate()*deadline.Seconds(), 0)
	return v
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
