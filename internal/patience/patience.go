// Package patience is the one setting for how long a test waits in real
// time: for a condition to hold, for a process to answer, for a harness to
// get ready.
//
// A wait ends as soon as its condition holds, so a generous deadline costs a
// passing run nothing; a short one fails a run on a machine that is slower
// than the one the test was written on — a brand-new machine compiling the
// rest of the module, or one shared with other work. So every real-time wait
// in a test takes its deadline from here: Wait (at least two minutes, for
// anything that waits on other processes) or Scaled (a budget of the test's
// own, never less than a minute), and CLUB_PATIENCE scales them all
// (CLUB_PATIENCE=3 waits three times as long; values below 1 are refused, so
// that nobody makes the suite less patient than it was written).
//
// Waits on a virtual clock are not real-time waits and do not come here.
// make lint (internal/archtest) refuses a literal real-time deadline under a
// minute in a test anywhere else.
package patience

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// Env names the environment variable that scales every wait.
const Env = "CLUB_PATIENCE"

const (
	// base is the deadline of a wait on other processes at scale 1.
	base = 2 * time.Minute
	// floor is the shortest deadline any wait is given at scale 1.
	floor = time.Minute
)

var (
	once    sync.Once
	factor  float64
	problem error
)

// Factor returns the scale CLUB_PATIENCE sets (1 when unset). It panics with
// a message naming the variable when the value is not a number of at least 1:
// a test run with a mistyped setting must not silently run with another.
func Factor() float64 {
	once.Do(func() {
		factor = 1
		v := os.Getenv(Env)
		if v == "" {
			return
		}
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil:
			problem = fmt.Errorf("patience: %s=%q is not a number", Env, v)
		case f < 1:
			problem = fmt.Errorf("patience: %s=%q is below 1; it scales the deadlines up, never down", Env, v)
		default:
			factor = f
		}
	})
	if problem != nil {
		panic(problem)
	}
	return factor
}

// Wait is the deadline of a real-time wait on other processes: a stack, an
// emulator, a function, a poller. Two minutes at scale 1.
func Wait() time.Duration { return scale(base) }

// Scaled is a budget a test chose for itself (the length of a soak, a
// harness start that builds every function), scaled by CLUB_PATIENCE and
// never below a minute at scale 1.
func Scaled(d time.Duration) time.Duration { return scale(max(d, floor)) }

// Within is the deadline of a wait on other processes whose test gave it a
// budget of its own: the larger of Wait() and Scaled(d). Helpers that take a
// caller's "within" pass it through here, so that a short budget written at
// a call site cannot make the wait impatient.
func Within(d time.Duration) time.Duration { return max(Wait(), Scaled(d)) }

// Deadline is the instant a wait that starts now gives up: now + Wait().
func Deadline() time.Time { return time.Now().Add(Wait()) }

// DeadlineIn is now + Scaled(d).
func DeadlineIn(d time.Duration) time.Time { return time.Now().Add(Scaled(d)) }

func scale(d time.Duration) time.Duration { return time.Duration(float64(d) * Factor()) }
