// Package model holds the Promela models of the protocol and spin_test.go
// (build tag model, run by make model), which verifies every model with
// SPIN and checks that every documented mutation is caught.
package model
