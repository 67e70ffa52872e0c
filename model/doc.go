// Package model holds the Promela models of the protocol (README.md) and
// the tests that tie them to the code: model_test.go compares the purchase
// model's statuses and transitions with internal/club/purchase's table
// (make test runs it), and spin_test.go (build tag model, run by make
// model) verifies every model with SPIN and checks that every documented
// mutation is caught.
package model
