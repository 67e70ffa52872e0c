package bench_test

import (
	"errors"
	"fmt"
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
	"github.com/clubdev/club/internal/patience"
)

// profiles is a CPU profile of the benchmark process (the load generator
// and the local cloud) and of every function process, in progress.
type profiles struct {
	s    *stack
	dir  string
	self *os.File
	pids []int
	// selfCPU and fnCPU are the CPU seconds of this process and of every
	// function process when the profiles started.
	selfCPU float64
	fnCPU   map[int]float64
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
	p.fnCPU = map[int]float64{}
	for _, st := range s.functionStats(tb) {
		p.pids = append(p.pids, st.PIDs...)
	}
	for _, pid := range p.pids {
		_ = syscall.Kill(pid, syscall.SIGUSR1)
		p.fnCPU[pid], _ = processCPU(pid)
	}
	p.selfCPU = selfCPU()
	return p
}

// loadLabel marks the goroutines of the load generator and the benchmark's
// own polling (and those they start, vegeta's connections among them) in
// the benchmark process's CPU profile, to tell them from the local cloud.
var loadLabel = pprof.Labels("part", "load")

// cpu reads the CPU time every process used since startProfiles: this
// process split by loadLabel's share of its profile (taken after stop),
// then each function's processes summed. Call it before stop, once every
// effect has appeared: a function process that ended meanwhile is not
// counted, and is named in the log.
func (p *profiles) cpu(tb testing.TB) (self float64, functions []bench.ProcessCPU) {
	tb.Helper()
	self = selfCPU() - p.selfCPU
	seen := map[int]bool{}
	stats := p.s.functionStats(tb)
	for _, fn := range slices.Sorted(maps.Keys(stats)) {
		c := bench.ProcessCPU{Component: "function " + fn}
		for _, pid := range stats[fn].PIDs {
			seen[pid] = true
			now, err := processCPU(pid)
			if err != nil {
				tb.Logf("CPU of %s process %d: %v", fn, pid, err)
				continue
			}
			c.Processes++
			c.Seconds += now - p.fnCPU[pid]
		}
		functions = append(functions, c)
	}
	for pid := range p.fnCPU {
		if !seen[pid] {
			tb.Logf("function process %d ended during the run: its CPU is not counted", pid)
		}
	}
	return self, functions
}

// splitSelf splits the benchmark process's CPU seconds by the share of
// loadLabel's samples in its profile.
func (p *profiles) splitSelf(tb testing.TB, self float64) []bench.ProcessCPU {
	share := 0.0
	if p.self != nil {
		var err error
		if share, err = labelShare(p.self.Name(), "part", "load"); err != nil {
			tb.Logf("share of the load generator: %v", err)
		}
	}
	return []bench.ProcessCPU{
		{Component: "load generator and benchmark polling (share of the benchmark process's profile)", Seconds: self * share},
		{Component: "local cloud, kumo, sandboxes (the rest of the benchmark process)", Processes: 1, Seconds: self * (1 - share)},
	}
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times on Linux.
const clockTicks = 100

// processCPU is the user and system CPU seconds of process pid so far.
func processCPU(pid int) (float64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after its
	// closing parenthesis start with the state (field 3).
	i := strings.LastIndexByte(string(raw), ')')
	f := strings.Fields(string(raw[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, raw)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return (utime + stime) / clockTicks, nil
}

// selfCPU is this process's user and system CPU seconds so far.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

var tagLineRE = regexp.MustCompile(`^\s*([0-9.]+)(m?s) \(\s*[0-9.]+%\): (.*)$`)

// labelShare is the share of the samples of the profile at path that carry
// the label key=value (`go tool pprof -tags`).
func labelShare(path, key, value string) (float64, error) {
	raw, err := exec.Command("go", "tool", "pprof", "-tags", path).Output()
	if err != nil {
		return 0, err
	}
	total, err := summarize("", path)
	if err != nil || total.Seconds == 0 {
		return 0, errors.Join(errors.New("no samples"), err)
	}
	in := false
	for _, line := range strings.Split(string(raw), "\n") {
		if k, _, ok := strings.Cut(strings.TrimSpace(line), ": Total"); ok {
			in = k == key
			continue
		}
		if m := tagLineRE.FindStringSubmatch(line); in && m != nil && m[3] == value {
			s, _ := strconv.ParseFloat(m[1], 64)
			if m[2] == "ms" {
				s /= 1000
			}
			return s / total.Seconds, nil
		}
	}
	return 0, nil
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
	deadline := patience.Deadline()
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
