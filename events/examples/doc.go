// Package examples holds the stored example of every event type and schema
// version the Club backend reads, one file per version named
// "<type>.v<N>.json". They are the contract's golden files: package events
// checks that each one decodes and round-trips through its Go types and that
// every supported version has one, and every consumer's tests should decode
// all of them (readers ship before writers).
//
// Add a file here before a writer starts producing a new version. The package
// has no dependencies, so any test can import it.
package examples
