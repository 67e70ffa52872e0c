// Package outage measures what owed mail costs while the mail provider is
// down, the old way (every pending mail comes back with its backoff, 1 s to
// 30 s, all through the outage) beside the new (refused mail is parked and
// released by the probe that finds the provider up): AWS requests and
// dollars per pending mail per hour of outage, and how long after the
// recovery the last mail goes out.
//
// An hour of outage is not waited out: the notifier's real handler,
// consumer, breaker, store (in memory) and mail client (against the mail
// sandbox) run on a virtual clock, over a model of the notifications
// queue, its parking queue and the event source mapping (five instances,
// batches of ten) that counts every request the way AWS bills it. Only
// time is simulated; every decision is the product code's. It is run by
// itself (it does not start the in-process stack of package bench):
//
//	go test -run '^$' -bench . -benchtime 1x ./bench/outage -args -club.report docs/benchmarks.md
//
// TestOutage holds the promises with the same model on every run of the
// tests.
package outage
