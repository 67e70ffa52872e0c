// Package clubctl implements the clubctl operations CLI: a cobra command
// tree whose root (clubctl) owns the flags every command shares (--json,
// --stack-file) and whose subcommands each live in a file of their own
// (token.go, ...), registered in the commands list in root.go.
//
// Commands write results to the Globals' Stdout (human text by default,
// one JSON document with --json) and nothing else there, so their output
// can be piped; diagnostics go to Stderr. Errors are returned, never
// printed by the command: Execute prints them once and maps them to the
// exit status (2 for a usage error such as a bad flag, 1 otherwise). Only
// cmd/clubctl calls os.Exit.
//
// Commands read the stack's outputs (endpoints, names, issuer) from the
// stack file the local cloud writes (see package stackfile).
package clubctl
