//go:build unix

package main

import (
	"os"
	"syscall"
)

// execSelf replaces the process with the same program and arguments and env
// added to the environment: same process id, so Ctrl-C and a supervisor's
// signals still reach it. It returns only on failure.
var execSelf = func(env []string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return syscall.Exec(exe, os.Args, append(os.Environ(), env...))
}
