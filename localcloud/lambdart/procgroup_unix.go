//go:build unix

package lambdart

import (
	"os/exec"
	"syscall"
)

var (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// setProcessGroup puts the process in a new process group whose id is its
// pid, so that signalling the group reaches every child it starts.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup signals the process group led by pid. pid 0 means the process
// never started and is ignored; an empty group (ESRCH) is not an error.
func signalGroup(pid int, sig syscall.Signal) {
	if pid <= 0 {
		return
	}
	_ = syscall.Kill(-pid, sig) // only fails with ESRCH: the group is gone already
}
