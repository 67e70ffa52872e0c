// Package clubctl implements the clubctl operations CLI: a cobra command
// tree whose root (clubctl) owns the flags every command shares (--json,
// --stack-file) and whose subcommands each live in a file of their own
// (token.go, stackfile_cmd.go, status.go, dlq.go, dlqredrive.go, replay.go,
// capacity.go), registered in the commands list in root.go. The logic they
// drive lives in the internal/ops packages, which know nothing of cobra.
//
// Commands write results to the Globals' Stdout (human text by default,
// one JSON document with --json) and nothing else there, so their output
// can be piped; diagnostics and progress bars go to Stderr. Errors are
// returned, never printed by the command: Execute prints them once, on one
// line, and maps them to the exit status: 2 for a usage error such as a bad
// flag (*UsageError and cobra's own), 3 for a refusal to do something unsafe
// (*RefusedError: a replay beyond the inbox retention, a redrive into a
// late queue), 1 otherwise. Only cmd/clubctl calls os.Exit.
//
// Commands read the stack's outputs (endpoints, names, issuer) from the
// stack file (see package stackfile) and reach AWS through the standard SDK
// configuration, pointed at the stack file's endpoint when none is
// configured (Globals.AWSConfig). A stack file with an issuer key is the
// local cloud's: there clubctl uses static credentials and reads queue ages
// from the local cloud's own record (GET /_club/queues/age), as it reads
// CloudWatch on AWS; neither receives a message. Peeking at messages for
// their age (a receive each) happens only when asked (--peek).
//
// Long-running commands (dlq redrive, replay) stop between batches when the
// context passed to Execute is cancelled (cmd/clubctl cancels it on Ctrl-C).
package clubctl
