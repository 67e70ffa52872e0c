package bench_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/bench"
	"github.com/clubdev/club/localcloud"
	"github.com/clubdev/club/localcloud/freeport"
	"github.com/clubdev/club/localcloud/state"
)

var (
	reportPath   = flag.String("club.report", "", "write the Markdown report to this path (relative to the module root) and its plots beside it")
	verbose      = flag.Bool("club.verbose", false, "show the local cloud's and the functions' logs")
	keepProfiles = flag.String("club.profiles", "", "also keep the raw CPU profiles of the throughput run in this directory")
	rateFlag     = flag.Float64("club.rate", 300, "arrival rate of the throughput benchmark (enrollments per second)")
	durationFlag = flag.Duration("club.duration", time.Minute, "duration of the throughput benchmark")
	naiveFlag    = flag.Bool("club.naive", true, "benchmark 3 also measures the naive design (a second local cloud)")
	persistFlag  = flag.Bool("club.persist", false, "keep the product stack's data in a state directory, as make run does (the benchmark process starts again with kumo's data directory set)")
)

// report collects what the benchmarks measure; TestMain writes it.
var report = &bench.Report{}

// product is the local cloud every benchmark but the naive variant's uses.
var product *stack

// The benchmarks live in b1_…_test.go to b5_…_test.go, numbered as in the
// issue and the report; go test runs them in that order, so the throughput
// run comes early, while the local cloud's tables are still small.
func TestMain(m *testing.M) { os.Exit(run(m)) }

// run starts the local cloud only when benchmarks were asked for: `make
// test` runs this package's unit tests and nothing else.
func run(m *testing.M) int {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		return m.Run()
	}
	if *persistFlag && os.Getenv(benchDataEnv) == "" {
		return withStateDirectory()
	}
	if dir := os.Getenv(benchDataEnv); dir != "" {
		defer os.RemoveAll(dir)
		report.DataKept = true
	}
	// The local cloud keeps every item and stream record in this process's
	// heap, and the default GC target made the collector a third of its CPU
	// under load (see the profiles in docs/benchmarks.md). Collect less
	// often, within a memory limit. GOGC and GOMEMLIMIT, when set, win.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(8 << 30)
	}
	report.Started = time.Now()
	report.Machine = describeMachine()
	report.Machine.LoadBefore = loadAverage()
	report.Command = "make bench"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var err error
	product, err = startStack(ctx, filepath.Join(moduleRoot(), "infra/template.yaml"), os.Getenv(benchDataEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "start local cloud:", err)
		return 1
	}
	code := m.Run()
	if err := product.close(); err != nil {
		fmt.Fprintln(os.Stderr, "stop local cloud:", err)
	}
	report.Finished = time.Now()
	report.Machine.LoadAfter = loadAverage()
	if !report.Full() {
		// Some benchmarks alone: their sections say how they were run.
		report.Command = fmt.Sprintf("go test -run '^$' -bench '%s' -benchtime 1x ./bench", flag.Lookup("test.bench").Value)
	}
	// Written even when a benchmark failed: its targets then read "not met".
	if *reportPath != "" {
		path := *reportPath
		if !filepath.IsAbs(path) {
			path = filepath.Join(moduleRoot(), path)
		}
		files, err := report.Write(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "write report:", err)
			return max(code, 1)
		}
		for _, f := range files {
			fmt.Println("wrote", f)
		}
	}
	return code
}

// benchDataEnv names the state directory of a -club.persist run, set by
// withStateDirectory for the process it starts.
const benchDataEnv = "CLUB_BENCH_STATE_DIR"

// withStateDirectory prepares an empty state directory and starts this
// benchmark process again, in its place, with kumo's data directory set:
// kumo reads it when the process starts (docs/local-cloud.md, Keeping data
// across restarts). It returns only on failure.
func withStateDirectory() int {
	dir, err := os.MkdirTemp("", "club-bench-state-")
	if err == nil {
		var d *state.Dir
		if d, err = state.Open(dir, true); err == nil {
			err = syscall.Exec(os.Args[0], os.Args, append(os.Environ(),
				benchDataEnv+"="+d.Path, localcloud.KumoDataDirEnv+"="+d.Kumo(), localcloud.KumoFlushIntervalEnv+"="+localcloud.KumoFlushIntervalOff))
		}
	}
	fmt.Fprintln(os.Stderr, "-club.persist:", err)
	return 1
}

// moduleRoot is the module's folder: a test binary runs in its package's
// folder. (Not the source file's path: make builds with -trimpath, which
// leaves only the import path there.)
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Join(dir, "..")
}

// TestModuleRootHoldsTheTemplate: the benchmarks find the template and write
// the report from the module's folder, also when built as make builds
// (-trimpath).
func TestModuleRootHoldsTheTemplate(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"go.mod", "infra/template.yaml", "docs/benchmarks.md"} {
		_, err := os.Stat(filepath.Join(moduleRoot(), f))
		require.NoError(t, err, f)
	}
}

// freeAddr is an address for a server of the stack (see package freeport).
func freeAddr() string { return freeport.MustAddr() }

// startStack starts a local cloud with template on free ports, its
// functions built with the clubprofile tag (CPU profiles on demand, see
// internal/obs). dataDir, when set, is a state directory the stack keeps
// its data in, as make run does (-club.persist).
func startStack(ctx context.Context, template, dataDir string) (*stack, error) {
	dir, err := os.MkdirTemp("", "club-bench-")
	if err != nil {
		return nil, err
	}
	logs := io.Discard
	if *verbose {
		logs = os.Stderr
	}
	cloud, err := localcloud.Start(ctx, localcloud.Config{
		ModuleRoot:     moduleRoot(),
		TemplatePath:   template,
		StateDir:       dir,
		EndpointAddr:   freeAddr(),
		APIAddr:        freeAddr(),
		MailAddr:       freeAddr(),
		PaymentAddr:    freeAddr(),
		BuildTags:      []string{"clubprofile"},
		DataDir:        dataDir,
		Logger:         slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		FunctionOutput: logsIf(*verbose),
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s, err := newStack(cloud, dir)
	if err != nil {
		_ = cloud.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func logsIf(on bool) io.Writer {
	if on {
		return os.Stderr
	}
	return nil
}

// describeMachine reads the CPU model and memory from /proc (Linux).
func describeMachine() bench.Machine {
	m := bench.Machine{Cores: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, GoVersion: runtime.Version(), CPU: "unknown CPU"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				m.MemoryGiB = kb / (1 << 20)
			}
		}
	}
	return m
}

// loadAverage is the 1-minute load average (Linux), 0 if unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}
