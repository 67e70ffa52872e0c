// Package stackfile is the contract between the local cloud and the tools that
// talk to it: the local cloud writes the outputs of the stack it provisioned
// to a JSON file (by default .club/stack.json), and clubctl, tests and
// benchmarks read it instead of guessing names, URLs and ports.
//
// The JSON field names are the contract; add fields freely, never rename one.
// Maps are keyed by the logical id of the resource in infra/template.yaml, so
// a reader asks for "NotificationsQueue" and gets the URL the emulator chose.
//
// Save is atomic (a reader never sees a half-written file) and may be called
// again to replace the file. Load and Save keep no state and are safe to call
// from several goroutines and processes.
package stackfile
