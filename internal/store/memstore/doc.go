// Package memstore is the hand-written in-memory fake of every domain port
// (the same set the DynamoDB adapter in package store implements). It keeps
// the adapter's contract, checked by the shared suites in package storetest:
// transactions are all-or-nothing under one mutex, conditions and error
// precedence are the same, and values are copied in and out.
//
// Use it in unit tests of code built on the ports (API handlers, consumers);
// it has no expiry (TTL) and no latency. All methods are safe for concurrent
// use.
package memstore
