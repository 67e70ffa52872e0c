package clubctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/spf13/cobra"

	"github.com/clubdev/club/internal/sdkhttp"
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

	// loadAWS loads the standard AWS configuration (environment, shared
	// files); tests replace it.
	loadAWS func(ctx context.Context) (aws.Config, error)
	// clients builds the AWS clients from a configuration; tests replace
	// single clients with fakes.
	clients clients
}

// localRegion is the only region the local cloud serves.
const localRegion = "us-east-1"

// IsLocal reports whether stack is the local cloud: only the local cloud
// writes an issuer key file into its stack file.
func IsLocal(stack *stackfile.Stack) bool { return stack.IssuerKeyFile != "" }

// AWSConfig returns the AWS SDK configuration for talking to stack: the
// standard configuration (AWS_ENDPOINT_URL, AWS_PROFILE, AWS_REGION, ...),
// pointed at the stack's endpoint when that configuration names none. For
// the local cloud it also fills in the region and static credentials, which
// the local cloud accepts without checking.
func (g *Globals) AWSConfig(ctx context.Context, stack *stackfile.Stack) (aws.Config, error) {
	cfg, err := g.loadAWS(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.BaseEndpoint == nil && stack.Endpoint != "" {
		cfg.BaseEndpoint = aws.String(stack.Endpoint)
	}
	if IsLocal(stack) {
		if cfg.Region == "" {
			cfg.Region = localRegion
		}
		cfg.Credentials = credentials.NewStaticCredentialsProvider("local", "local", "")
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("no AWS region configured: set AWS_REGION or AWS_PROFILE")
	}
	return cfg, nil
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
	newStackFileCommand,
	newStatusCommand,
	newDLQCommand,
	newCapacityCommand,
	newReplayCommand,
	newReconcileCommand,
	newConsoleCommand,
}

// RefusedError marks a command that refused to act because acting would be
// unsafe (a replay window beyond the inbox retention, a redrive while the
// source queue is already late): Execute exits with status 3, so that scripts
// can tell a refusal from a failure.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "refused: " + e.Reason }

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
	return newRoot(newGlobals(stdout, stderr))
}

func newGlobals(stdout, stderr io.Writer) *Globals {
	return &Globals{
		Stdout: stdout, Stderr: stderr, Now: time.Now,
		loadAWS: func(ctx context.Context) (aws.Config, error) {
			cfg, err := config.LoadDefaultConfig(ctx)
			sdkhttp.Mend(&cfg)
			return cfg, err
		},
		clients: sdkClients(),
	}
}

func newRoot(g *Globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "clubctl",
		Short: "Operate the Club backend: tokens, queues, DLQs, replays, capacity",
		Long: `clubctl operates the Club backend on any endpoint: the local cloud, LocalStack or AWS.
It finds the stack's queues, tables, API and issuer in the stack outputs file
(--stack-file: written by the local cloud, or by 'clubctl stack-file' for a stack on
AWS or LocalStack) and talks to AWS through the standard AWS configuration
(AWS_ENDPOINT_URL, AWS_PROFILE, AWS_REGION, ...).

Output is for people by default; --json prints one JSON document for scripts.
Exit status: 0 on success, 1 when the command failed, 2 when it was called wrongly,
3 when it refused to act because acting would be unsafe (see the command's help).`,
		Example: `  # A token for a student, to call the local HTTP API
  TOKEN=$(clubctl token --sub student-1 --role student --email s1@example.com)
  curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:3000/classes/c-1

  # The same, as JSON, valid for ten minutes
  clubctl token --sub teacher-1 --role teacher --ttl 10m --json

  # Queues, outbox, stream lag: depth and age against each class's limit
  clubctl status

  # The same, and the dead letters, purchases and alarms, as a web page on loopback
  clubctl console

  # Dead letters: why, then a bounded batch back, then the rest at a rate
  clubctl dlq show --queue notifications
  clubctl dlq redrive --queue notifications --max 10 --rate 5/s

  # Events of the last two hours again to the analytics consumer
  clubctl replay --consumer analytics --since 2h --dry-run

  # Purchases a person must decide, then one decision
  clubctl reconcile
  clubctl reconcile resolve p-4b3a2918 --action release --reason "no payment at the provider, ticket 813"

  # 6000 queued, 100/s served, 80/s arriving: when is it drained?
  clubctl capacity --backlog 6000 --arrival 80 --rate 100

  # A stack on AWS
  clubctl stack-file --stack-name club-prod --out .club/prod.json`,
		SilenceErrors: true, // Execute prints errors once
		SilenceUsage:  true, // a failed command is not a usage problem
	}
	root.PersistentFlags().BoolVar(&g.JSON, "json", false, "print machine-readable JSON")
	root.PersistentFlags().StringVar(&g.StackFile, "stack-file", stackfile.DefaultPath, "stack outputs file (written by the local cloud or clubctl stack-file)")
	root.SetOut(g.Stdout)
	root.SetErr(g.Stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{Err: err} })
	for _, build := range commands {
		root.AddCommand(build(g))
	}
	return root
}

// Execute runs clubctl with args (without the program name) and returns
// the process exit status.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return execute(ctx, newGlobals(stdout, stderr), args)
}

func execute(ctx context.Context, g *Globals, args []string) int {
	stderr := g.Stderr
	root := newRoot(g)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "clubctl: %v\n", err)
	var refused *RefusedError
	if errors.As(err, &refused) {
		return 3
	}
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
	prefixes := []string{
		"unknown command", "required flag", "accepts ", "requires ",
		"if any flags in the group", "at least one of the flags in the group", // flag groups
	}
	for _, prefix := range prefixes {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}
