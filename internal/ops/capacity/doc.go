// Package capacity is the capacity model of docs/principles.md §1.8 and a simulation of
// it.
//
// [Model] is the arithmetic: a backlog B drained at rate R while A more
// arrive per second shrinks at R − A, so it is gone after B / (R − A); 6000
// e-mails at 100/s take 60 s, and with 80/s still arriving 300 s. Held
// against a promise (a deadline), it says whether the promise holds and what
// rate would keep it: A + B / deadline.
//
// [Simulation] runs the same situation as discrete events with what the
// arithmetic leaves out: Poisson arrivals, a spread of service times over a
// fixed number of workers, and transient failures retried after a delay up
// to a bounded number of attempts (then the DLQ). It shows that variance
// barely moves the drain time while retries eat capacity: with 10% of
// attempts failing, 100/s of attempts complete only about 90/s of messages,
// and the 300 s of the example become about 600 s. [Plot] draws the drain
// curve beside the model's line.
//
// Everything here is pure computation: no I/O except Plot's file, no clock,
// and a Simulation with the same Seed gives the same result.
package capacity
