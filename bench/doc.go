// Package bench measures the Club backend against the local cloud and writes
// the results as docs/benchmarks.md (docs/principles.md §10, `make bench`).
//
// The benchmarks (Benchmark* functions in the package's tests) start the
// local cloud in-process with infra/template.yaml, as the end-to-end suite
// does, and drive it through its public surface: the HTTP API (load from
// github.com/tsenart/vegeta/v12 as a library, at a constant arrival rate),
// the AWS endpoint's request counter (/_club/requests), the local cloud's
// stats and the mail sandbox. They report:
//
//  1. enrollment latency with the mail provider at 0 ms and at 2,000 ms,
//     beside a synchronous "send inside the request" baseline measured in
//     the same run: the ratio is the seed's incident;
//  2. sustained enrollments per second through the whole pipeline, with the
//     effects counted (outbox rows, mails, roster, counters), and the
//     end-to-end notification latency, with CPU profiles and the CPU seconds
//     per 1,000 enrollments of every process (the load generator's share
//     of the benchmark process split off by a profile label);
//  3. AWS requests per enrollment by service and operation, beside a naive
//     design measured the same way (testdata/naive), priced per million
//     enrollments;
//  4. a backlog drain against the capacity model of docs/principles.md §1.8;
//  5. function binary sizes and start-to-first-poll times.
//
// This package holds what the benchmarks produce — the results, the cost
// and drain models, the Markdown report and its plots — so that it is unit
// tested in `make test` while the benchmarks themselves only run under
// `make bench`. Every ratio in a report comes from one run.
package bench
