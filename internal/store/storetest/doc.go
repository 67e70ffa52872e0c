// Package storetest holds one contract suite per domain port. Each suite runs
// against any implementation: the in-memory fake (package memstore) and the
// DynamoDB adapter (package store, on the emulator). A behaviour that one
// implementation has and the other lacks fails here, so code tested against
// the fake behaves the same in production.
//
// Suites assert facts (rows, counts, states), run their cases in parallel, and
// ask the Factory for fresh, empty ports per case.
package storetest
