package clock

import "time"

// Clock tells time and schedules callbacks.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f once d has elapsed, unless the returned Timer is
	// stopped first.
	AfterFunc(d time.Duration, f func()) Timer
	// After returns a channel that receives the time once d has elapsed.
	After(d time.Duration) <-chan time.Time
}

// Timer is a pending AfterFunc callback.
type Timer interface {
	// Stop prevents the callback from running. It reports whether it did
	// so: false means the callback already ran or is running.
	Stop() bool
}

// Real is the wall clock.
type Real struct{}

var _ Clock = Real{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc; f runs in its own goroutine.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// After wraps time.After.
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }
