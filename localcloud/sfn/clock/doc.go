// Package clock is the time source of the Step Functions executor.
//
// Real is the wall clock. Virtual is a manual clock for tests: time moves
// only when the test calls Advance, or, after AutoAdvance, whenever every
// unit of work it tracks is idle, like the time skipping of Temporal's test
// environment. A Wait state of 15 minutes or a 15-minute callback timeout
// then completes in microseconds of real time.
//
// Idleness is tracked with Hold and Release. Code driven by a Virtual clock
// (the executor) holds while it computes and releases while it blocks; a
// timer callback, or anyone waking a blocked goroutine, holds on behalf of
// the goroutine it wakes, so there is no instant at which the clock sees
// zero holds while work is about to resume. Time is advanced only when the
// hold count is zero and a timer is pending.
//
// Both clocks are safe for concurrent use. Virtual fires timers in deadline
// order (ties in creation order) and runs AfterFunc callbacks synchronously
// in the goroutine that advances time, so a callback must not block.
package clock
