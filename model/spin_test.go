//go:build model

package model

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A run is one SPIN verification: a model, its bounds and switches, and
// whether it checks safety (assertions and end states, in every state) or
// a liveness property (an LTL claim, acceptance cycles under weak fairness).
type run struct {
	name     string
	model    string
	defines  []string
	liveness string // the ltl property's name; "" for safety
}

// The verifications: every model at its bounds (README.md gives them).
var verifications = []run{
	{name: "outbox safety", model: "outbox.pml"},
	{name: "outbox liveness", model: "outbox.pml", liveness: "published"},
	{name: "delivery safety", model: "delivery.pml"},
	{name: "delivery liveness", model: "delivery.pml", liveness: "mailed"},
	{name: "purchase safety", model: "purchase.pml"},
	// Liveness without the rival student: the rival only takes the seat
	// (the purchase is then never created), and leaving it out keeps the
	// fair-cycle search within a minute.
	{name: "purchase liveness", model: "purchase.pml", defines: []string{"RIVALS=0"}, liveness: "owned"},
}

// A mutation is a deliberate mistake: SPIN must find a counterexample, and
// the trail must name the promise it breaks.
type mutation struct {
	run
	breaks string // a fragment of the violated assertion SPIN prints
}

var mutations = []mutation{
	{run{name: "MUT_MARK_BEFORE_PUBLISH", model: "outbox.pml"}, "sent[i]"},
	{run{name: "MUT_SWEEPER_NO_LEASE", model: "outbox.pml"}, "working<=1"},
	{run{name: "MUT_EFFECT_OUTSIDE_INBOX", model: "delivery.pml"}, "effect[i]<=1"},
	{run{name: "MUT_NOTIFY_KEY_PER_ATTEMPT", model: "delivery.pml"}, "mails[i]<=1"},
	{run{name: "MUT_REFUND_KEY_REUSED", model: "purchase.pml"}, "asked||"},
	{run{name: "MUT_NO_CUTOFF", model: "purchase.pml"}, "clk[p]==0"},
	{run{name: "MUT_RESOLVE_UNCONDITIONAL", model: "purchase.pml"}, "can[("},
	{run{name: "MUT_REFUND_EXEC_NAME_REUSED", model: "purchase.pml"}, "!(ownerless)"},
	{run{name: "MUT_LATE_PAYMENT_WITHOUT_ROW", model: "purchase.pml"}, "!(ownerless)"},
}

// result is what pan reported.
type result struct {
	errors, states, depth int
	memoryMB, seconds     float64
	violation             string
	trailSteps            int
}

var (
	reErrors  = regexp.MustCompile(`errors: (\d+)`)
	reStates  = regexp.MustCompile(`(\d+) states, stored`)
	reDepth   = regexp.MustCompile(`depth reached (\d+)`)
	reMemory  = regexp.MustCompile(`([\d.]+)\s+total actual memory usage`)
	reElapsed = regexp.MustCompile(`pan: elapsed time ([\d.e+]+) seconds`)
	reViolate = regexp.MustCompile(`pan:1: (.*) \(at depth \d+\)`)
	// pan's own limits: any of these means the search was not exhaustive.
	reIncomplete = regexp.MustCompile(`Search not completed|reached -DMEMLIM bound|max search depth too small|too many processes`)
)

// verify runs spin -a, gcc and pan for r in a directory of its own.
func verify(t *testing.T, r run, mutant string) result {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(r.model)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, r.model), src, 0o644); err != nil {
		t.Fatal(err)
	}
	var defs []string
	for _, d := range r.defines {
		defs = append(defs, "-D"+d)
	}
	if mutant != "" {
		defs = append(defs, "-D"+mutant)
	}
	sh := func(name string, args ...string) string {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil && name != "./pan" {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	sh("spin", append(append([]string{"-a"}, defs...), r.model)...)
	// MEMLIM bounds pan's memory (MB); a search that would need more stops
	// and is reported incomplete, which fails the run.
	// A mutation's counterexample comes within a few thousand states: its
	// pan is compiled unoptimised, which takes a tenth of the time.
	opt := "-O2"
	if mutant != "" {
		opt = "-O0"
	}
	cflags := []string{opt, "-w", "-DMEMLIM=1024", "-o", "pan", "pan.c"}
	panArgs := []string{"-m200000"}
	if r.liveness == "" {
		cflags = append([]string{"-DSAFETY", "-DNOCLAIM"}, cflags...)
	} else {
		cflags = append([]string{"-DNFAIR=4"}, cflags...)
		panArgs = append(panArgs, "-a", "-f", "-N", r.liveness)
	}
	sh("gcc", cflags...)
	out := sh("./pan", panArgs...)
	var res result
	atoi := func(re *regexp.Regexp) int {
		m := re.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s: pan's output has no %q:\n%s", r.name, re, out)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	atof := func(re *regexp.Regexp) float64 {
		m := re.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s: pan's output has no %q:\n%s", r.name, re, out)
		}
		f, _ := strconv.ParseFloat(m[1], 64)
		return f
	}
	res.errors, res.states, res.depth = atoi(reErrors), atoi(reStates), atoi(reDepth)
	// pan stops at the first error; without one, the search must have
	// been exhaustive.
	if res.errors == 0 && reIncomplete.MatchString(out) {
		t.Fatalf("%s: the search was not exhaustive:\n%s", r.name, out)
	}
	res.memoryMB, res.seconds = atof(reMemory), atof(reElapsed)
	if m := reViolate.FindStringSubmatch(out); m != nil {
		res.violation = m[1]
	}
	trail := filepath.Join(dir, r.model+".trail")
	if res.errors > 0 {
		b, err := os.ReadFile(trail)
		if err != nil {
			t.Fatalf("%s: %d errors and no trail: %v\n%s", r.name, res.errors, err, out)
		}
		// A trail is one line a step, after header lines that start "-".
		for _, line := range strings.Split(string(b), "\n") {
			if line != "" && !strings.HasPrefix(line, "-") {
				res.trailSteps++
			}
		}
		// The trail replays: spin follows it to the same violation.
		replay := sh("spin", append(append([]string{"-t"}, defs...), r.model)...)
		if !strings.Contains(replay, "assertion violated") && !strings.Contains(replay, "acceptance cycle") &&
			!strings.Contains(replay, "invalid end state") {
			t.Errorf("%s: replaying the trail did not reach the violation:\n%s", r.name, tail(replay, 20))
		}
	}
	return res
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestModelsVerify: every model, exhaustively at its bounds, no error.
func TestModelsVerify(t *testing.T) {
	for _, r := range verifications {
		t.Run(r.name, func(t *testing.T) {
			res := verify(t, r, "")
			if res.errors != 0 {
				t.Fatalf("%s: %d errors: %s (trail of %d steps)", r.name, res.errors, res.violation, res.trailSteps)
			}
			fmt.Printf("| %s | %d | %d | %.1f MB | %.2f s |\n", r.name, res.states, res.depth, res.memoryMB, res.seconds)
		})
	}
}

// TestMutationsAreCaught: every documented mistake gives a counterexample
// trail that breaks the promise it is about.
func TestMutationsAreCaught(t *testing.T) {
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			res := verify(t, m.run, m.name)
			if res.errors == 0 {
				t.Fatalf("%s: SPIN found no counterexample (%d states)", m.name, res.states)
			}
			if !strings.Contains(res.violation, m.breaks) {
				t.Errorf("%s: the trail breaks %q, not the promise %q", m.name, res.violation, m.breaks)
			}
			fmt.Printf("| %s | %s | caught: %s | trail of %d steps |\n", m.name, m.model, shorten(res.violation), res.trailSteps)
		})
	}
}

func shorten(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
