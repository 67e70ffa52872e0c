// Package clock gives the sandboxes their notion of time, so that tests can
// drive rate limits, refund delays, webhook backoff and injected latency by
// advancing a fake clock instead of sleeping.
//
// Real is the wall clock. Fake starts at a fixed instant and moves only when
// Advance is called; a channel from After fires once the fake time reaches
// its deadline. Because a Fake fires only from Advance, code under test never
// races the test for time: a test waits (with a deadline) until Waiters shows
// the code is blocked on the clock, then advances it. Both are safe for
// concurrent use.
package clock
