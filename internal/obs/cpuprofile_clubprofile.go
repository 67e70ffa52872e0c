//go:build clubprofile

package obs

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

// Built with the clubprofile tag (make bench builds the functions the local
// cloud runs that way), every program that imports obs records a CPU profile
// between SIGUSR1 and SIGUSR2 into cpu-<pid>-<n>.pprof in its working
// directory (the local cloud runs each function in its build directory). The
// file appears under its final name only once complete. Never in a release
// build: without the tag these signals keep their default meaning.
func init() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		var f *os.File
		n := 0
		for s := range sig {
			switch {
			case s == syscall.SIGUSR1 && f == nil:
				n++
				tmp, err := os.Create(fmt.Sprintf("cpu-%d-%d.pprof.tmp", os.Getpid(), n))
				if err != nil {
					continue
				}
				if err := pprof.StartCPUProfile(tmp); err != nil {
					tmp.Close()
					continue
				}
				f = tmp
			case s == syscall.SIGUSR2 && f != nil:
				pprof.StopCPUProfile()
				name := f.Name()
				if f.Close() == nil {
					_ = os.Rename(name, name[:len(name)-len(".tmp")])
				}
				f = nil
			}
		}
	}()
}
