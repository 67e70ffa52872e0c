package clubctl

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
)

// Every command explains itself with examples.
func TestEveryCommandHasHelpWithExamples(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		require.NotEmpty(t, c.Long, "%s: long help", c.CommandPath())
		require.NotEmpty(t, c.Example, "%s: examples", c.CommandPath())
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			walk(sub)
		}
	}
	walk(newRoot(newGlobals(io.Discard, io.Discard)))

	for _, args := range [][]string{
		{"status", "--help"}, {"dlq", "--help"}, {"dlq", "redrive", "--help"}, {"dlq", "show", "--help"},
		{"dlq", "list", "--help"}, {"replay", "--help"}, {"capacity", "--help"}, {"stack-file", "--help"},
	} {
		code, stdout, _ := runWith(t, nil, args...)
		require.Equal(t, 0, code, args)
		require.Contains(t, stdout, "Examples:", args)
	}
}

// Without a stack file every command that needs one says so on one line.
func TestCommandsWithoutAStack(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "stack.json")
	for _, args := range [][]string{
		{"status"},
		{"dlq", "list"},
		{"dlq", "show", "--queue", "roster"},
		{"dlq", "redrive", "--queue", "roster"},
		{"replay", "--consumer", "roster", "--since", "1h"},
	} {
		code, stdout, stderr := runWith(t, nil, append(args, "--stack-file", missing)...)
		require.Equal(t, 1, code, args)
		require.Empty(t, stdout)
		require.Equal(t, "clubctl: stack file not found: "+missing+" (is the local cloud running? start it with `make run`)\n", stderr, args)
	}
}
