// Package clock is the time source of code whose tests must control time:
// the sandboxes (rate limits, refund delays, webhook backoff, injected
// latency), the mail client's retry waits and the local cloud's schedules.
// Tests advance a fake clock instead of sleeping. (The Step Functions
// executor has its own clock, localcloud/sfn/clock, with timers and
// a virtual clock that advances itself.)
//
// Real is the wall clock. Fake starts at a fixed instant and moves only when
// Advance is called; a channel from After fires once the fake time reaches
// its deadline. Because a Fake fires only from Advance, code under test never
// races the test for time: a test waits (with a deadline) until Waiters shows
// the code is blocked on the clock, then advances it. Both are safe for
// concurrent use.
package clock
