package clubctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/clubdev/club/internal/stackfile"
)

// Globals are the flags and streams every command shares.
type Globals struct {
	// JSON selects machine-readable output (--json).
	JSON bool
	// StackFile is the path of the stack outputs file (--stack-file).
	StackFile string

	Stdout io.Writer
	Stderr io.Writer
	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// LoadStack reads the stack file named by --stack-file.
func (g *Globals) LoadStack() (*stackfile.Stack, error) {
	return stackfile.Load(g.StackFile)
}

// PrintJSON writes v to Stdout as one indented JSON document.
func (g *Globals) PrintJSON(v any) error {
	enc := json.NewEncoder(g.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// commands builds the subcommands. Add one line per command file.
var commands = []func(*Globals) *cobra.Command{
	newTokenCommand,
}

// UsageError marks an error in how the command was called (bad or missing
// flags, bad arguments): Execute exits with status 2 and points at --help.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// NewRootCommand returns the clubctl command tree writing to stdout and
// stderr.
func NewRootCommand(stdout, stderr io.Writer) *cobra.Command {
	g := &Globals{Stdout: stdout, Stderr: stderr, Now: time.Now}
	root := &cobra.Command{
		Use:   "clubctl",
		Short: "Operate the Club backend: tokens, queues, DLQs, replays, capacity",
		Long: `clubctl operates the Club backend on any endpoint: the local cloud, LocalStack or AWS.
It finds the stack's queues, tables, API and issuer in the stack outputs file
(--stack-file, written by the local cloud) and talks to AWS through the standard
AWS configuration (AWS_ENDPOINT_URL, AWS_PROFILE, AWS_REGION, ...).

Output is for people by default; --json prints one JSON document for scripts.
Exit status: 0 on success, 1 when the command failed, 2 when it was called wrongly.`,
		Example: `  # A token for a student, to call the local HTTP API
  TOKEN=$(clubctl token --sub student-1 --role student --email s1@example.com)
  curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:3000/classes/c-1

  # The same, as JSON, valid for ten minutes
  clubctl token --sub teacher-1 --role teacher --ttl 10m --json`,
		SilenceErrors: true, // Execute prints errors once
		SilenceUsage:  true, // a failed command is not a usage problem
	}
	root.PersistentFlags().BoolVar(&g.JSON, "json", false, "print machine-readable JSON")
	root.PersistentFlags().StringVar(&g.StackFile, "stack-file", stackfile.DefaultPath, "stack outputs file written by the local cloud")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{Err: err} })
	for _, build := range commands {
		root.AddCommand(build(g))
	}
	return root
}

// Execute runs clubctl with args (without the program name) and returns
// the process exit status.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := NewRootCommand(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "clubctl: %v\n", err)
	var usage *UsageError
	if errors.As(err, &usage) || isCobraUsageError(err) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return 2
	}
	return 1
}

// isCobraUsageError recognises the errors cobra raises itself before any
// command runs (unknown command, missing required flag, bad arguments),
// which it does not route through the flag error function.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, prefix := range []string{"unknown command", "required flag", "accepts ", "requires "} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}
