//go:build !unix

package lambdart

import (
	"os"
	"os/exec"
)

// Without process groups only the process itself can be signalled, and
// only killed: children it starts are not reached.
var (
	sigTerm = os.Kill
	sigKill = os.Kill
)

func setProcessGroup(*exec.Cmd) {}

func signalGroup(pid int, sig os.Signal) {
	if pid <= 0 {
		return
	}
	if proc, err := os.FindProcess(pid); err == nil {
		_ = proc.Signal(sig) // fails only if it already exited
	}
}
