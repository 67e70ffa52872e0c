package reliability

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The operator's moves in these scenarios (a replay, a redrive) are made
// with the operator's tool: cmd/clubctl, built once and run as a binary
// against the stack under test.

var clubctlBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "clubctl-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "clubctl")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/clubctl")
	cmd.Dir = moduleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build clubctl: %w\n%s", err, out)
	}
	return bin, nil
})

// runClubctl runs the built clubctl with args against the stack file.
func runClubctl(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	bin, err := clubctlBinary()
	require.NoError(t, err)
	cmd := exec.Command(bin, append(args, "--stack-file", stack.path)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	}
	require.NoError(t, err)
	return 0, out.String(), errb.String()
}
