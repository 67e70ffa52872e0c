// Package status gathers what `clubctl status` shows (docs/principles.md §8): per queue its
// depth, the age of its oldest message against its work class's limit, its
// dead-letter queue's depth and its drain rate; the outbox's unpublished rows
// and the age of the oldest; the lag of every stream consumer; purchases per
// status.
//
// A [Collector] reads the queues' depth twice, Sample apart, and derives the
// net drain rate and the time to empty from the difference (docs/principles.md §1.8: what
// matters is completions minus arrivals, which two samples measure without
// knowing either). Ages come from a queues.AgeProber: CloudWatch where the
// endpoint has the metric, a peek at message timestamps where allowed. Stream
// lag comes from the local cloud's /_club/stats ([LocalStats], records not
// yet delivered) or from CloudWatch's IteratorAge ([IteratorAges], on AWS).
// Purchases are counted by business status from the club table
// ([PurchaseScan]) when the stack runs the saga.
//
// Collect only reads (apart from the peek's brief lease, see package
// queues). The queue section is required; the other sections fail alone and
// are listed in Report.Problems, so that an operator still sees the queues
// when, say, the outbox table cannot be read.
package status
