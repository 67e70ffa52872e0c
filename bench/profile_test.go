package bench_test

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/bench"
)

// profiles is a CPU profile of the benchmark process (the load generator
// and the local cloud) and of every function process, in progress.
type profiles struct {
	s    *stack
	dir  string
	self *os.File
	pids []int
}

// startProfiles starts profiling this process and signals every function
// process to start its own profile (SIGUSR1, see internal/obs).
func startProfiles(tb testing.TB, s *stack) *profiles {
	tb.Helper()
	p := &profiles{s: s, dir: tb.TempDir()}
	f, err := os.Create(filepath.Join(p.dir, "local-cloud.pprof"))
	require.NoError(tb, err)
	if err := pprof.StartCPUProfile(f); err != nil {
		// Already profiling (go test -cpuprofile): that profile covers it.
		tb.Logf("benchmark process not profiled here: %v", err)
		f.Close()
	} else {
		p.self = f
	}
	for _, st := range s.functionStats(tb) {
		p.pids = append(p.pids, st.PIDs...)
	}
	for _, pid := range p.pids {
		_ = syscall.Kill(pid, syscall.SIGUSR1)
	}
	return p
}

// stop ends every profile and summarises them: the benchmark process, then
// each function's processes merged.
func (p *profiles) stop(tb testing.TB) []bench.ProfileSummary {
	tb.Helper()
	var out []bench.ProfileSummary
	for _, pid := range p.pids {
		_ = syscall.Kill(pid, syscall.SIGUSR2)
	}
	if p.self != nil {
		pprof.StopCPUProfile()
		require.NoError(tb, p.self.Close())
		if s, err := summarize("local cloud and load generator (benchmark process)", p.self.Name()); err == nil {
			out = append(out, s)
		} else {
			tb.Logf("summarize profile: %v", err)
		}
	}
	// Each function process writes cpu-<pid>-<n>.pprof in its build
	// directory, named after the function's logical id.
	build := filepath.Join(p.s.dir, "build")
	byFunction := map[string][]string{}
	deadline := time.Now().Add(10 * time.Second)
	for {
		files, _ := filepath.Glob(filepath.Join(build, "*", "cpu-*.pprof"))
		byFunction = map[string][]string{}
		for _, f := range files {
			fn := filepath.Base(filepath.Dir(f))
			byFunction[fn] = append(byFunction[fn], f)
		}
		if len(files) >= len(p.pids) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if *keepProfiles != "" {
		keep(tb, *keepProfiles, "local-cloud.pprof", filepath.Join(p.dir, "local-cloud.pprof"))
		for fn, files := range byFunction {
			for _, f := range files {
				keep(tb, *keepProfiles, fn+"-"+filepath.Base(f), f)
			}
		}
	}
	for _, fn := range slices.Sorted(maps.Keys(byFunction)) {
		s, err := summarize("function "+fn+" ("+strconv.Itoa(len(byFunction[fn]))+" processes)", byFunction[fn]...)
		if err != nil {
			tb.Logf("summarize profile of %s: %v", fn, err)
			continue
		}
		out = append(out, s)
		for _, f := range byFunction[fn] {
			// The next profiled run starts from nothing.
			_ = os.Rename(f, f+".done")
		}
	}
	return out
}

var totalSamplesRE = regexp.MustCompile(`Total samples = ([0-9.]+)(m?s)`)

// summarize runs `go tool pprof -top` on profiles (merged) and keeps the
// table of the top functions.
func summarize(component string, files ...string) (bench.ProfileSummary, error) {
	args := append([]string{"tool", "pprof", "-top", "-nodecount=15"}, files...)
	raw, err := exec.Command("go", args...).Output()
	if err != nil {
		return bench.ProfileSummary{}, err
	}
	text := string(raw)
	s := bench.ProfileSummary{Component: component}
	if m := totalSamplesRE.FindStringSubmatch(text); m != nil {
		s.Seconds, _ = strconv.ParseFloat(m[1], 64)
		if m[2] == "ms" {
			s.Seconds /= 1000
		}
	}
	if i := strings.Index(text, "      flat"); i >= 0 {
		text = text[i:]
	}
	s.Top = text
	return s, nil
}

// keep copies a profile to dir/name.
func keep(tb testing.TB, dir, name, from string) {
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	if err != nil {
		tb.Logf("keep profile %s: %v", name, err)
	}
}
