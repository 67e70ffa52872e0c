package model

import (
	"bufio"
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/clubdev/club/internal/club/purchase"
)

// block returns the lines of src between the line holding "BEGIN name" and
// the one holding "END name".
func block(t *testing.T, src []byte, name string) []string {
	t.Helper()
	var lines []string
	in, closed := false, false
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, "BEGIN "+name):
			in = true
		case strings.Contains(line, "END "+name):
			if in {
				closed = true
			}
			in = false
		case in:
			lines = append(lines, line)
		}
	}
	if !closed {
		t.Fatalf("purchase.pml has no BEGIN %s … END %s block", name, name)
	}
	return lines
}

// modelName is how purchase.pml spells a domain status: upper case.
func modelName(s purchase.Status) string { return strings.ToUpper(string(s)) }

var (
	edgeLine = regexp.MustCompile(`^\s*EDGE\((\w+),\s*(\w+),\s*(\w+)\);\s*$`)
	mtypeTok = regexp.MustCompile(`\b[A-Z_]+\b`)
)

// modelEdges reads the model's transition table: "FROM TO" → seat effect.
func modelEdges(t *testing.T, src []byte) map[string]string {
	t.Helper()
	edges := map[string]string{}
	for _, line := range block(t, src, "TRANSITIONS") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "/*") {
			continue
		}
		m := edgeLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("purchase.pml: a line of the TRANSITIONS block is not EDGE(FROM, TO, EFFECT);: %q", line)
		}
		key := m[1] + " " + m[2]
		if _, dup := edges[key]; dup {
			t.Errorf("purchase.pml lists %s twice", key)
		}
		edges[key] = m[3]
	}
	return edges
}

// TestModelStatusesAreTheDomains: the model's statuses are the domain's,
// and NONE (a purchase never created).
func TestModelStatusesAreTheDomains(t *testing.T) {
	src, err := os.ReadFile("purchase.pml")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range block(t, src, "STATUSES") {
		if i := strings.Index(line, "/*"); i >= 0 {
			line = line[:i]
		}
		got = append(got, mtypeTok.FindAllString(strings.ReplaceAll(line, "mtype", ""), -1)...)
	}
	want := []string{"NONE"}
	for _, s := range purchase.Statuses() {
		want = append(want, modelName(s))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("purchase.pml's statuses are %v; the domain's (and NONE) are %v", got, want)
	}
}

// TestModelTransitionsAreTheDomains: every pair of statuses is allowed by
// the model exactly when the domain allows it, with the same seat effect.
// A transition added to (or removed from) internal/club/purchase's table
// and not to the model's makes this fail, naming the edge.
func TestModelTransitionsAreTheDomains(t *testing.T) {
	src, err := os.ReadFile("purchase.pml")
	if err != nil {
		t.Fatal(err)
	}
	model := modelEdges(t, src)
	effects := map[purchase.SeatEffect]string{
		purchase.SeatUnchanged: "UNCHANGED", purchase.SeatReleased: "RELEASED", purchase.SeatTaken: "TAKEN",
	}
	domain := 0
	for _, from := range purchase.Statuses() {
		for _, to := range purchase.Statuses() {
			key := modelName(from) + " " + modelName(to)
			eff, allowed := purchase.SeatEffectOf(from, to)
			got, modelled := model[key]
			switch {
			case allowed && !modelled:
				t.Errorf("the domain allows %s → %s (seat %s); purchase.pml's TRANSITIONS do not: add EDGE(%s, %s, %s) and model who makes it",
					from, to, eff, modelName(from), modelName(to), effects[eff])
			case !allowed && modelled:
				t.Errorf("purchase.pml allows %s → %s; the domain does not", from, to)
			case allowed && got != effects[eff]:
				t.Errorf("%s → %s: the domain's seat effect is %s, purchase.pml's %s", from, to, effects[eff], got)
			}
			if allowed {
				domain++
			}
		}
	}
	for key := range model {
		from, to, _ := strings.Cut(key, " ")
		if !slices.Contains(statusNames(), from) || !slices.Contains(statusNames(), to) {
			t.Errorf("purchase.pml's edge %s names a status the domain does not have", key)
		}
	}
	if len(model) != domain {
		t.Errorf("purchase.pml has %d edges, the domain %d", len(model), domain)
	}
	if !t.Failed() {
		t.Logf("%d transitions, the same in the model and the domain", domain)
	}
}

func statusNames() []string {
	var names []string
	for _, s := range purchase.Statuses() {
		names = append(names, modelName(s))
	}
	return names
}

// TestModelTableParserSeesAMissingEdge: the comparison above is not
// vacuous: a model with one edge less, or one edge more, is told apart.
func TestModelTableParserSeesAMissingEdge(t *testing.T) {
	src, err := os.ReadFile("purchase.pml")
	if err != nil {
		t.Fatal(err)
	}
	full := modelEdges(t, src)
	less := bytes.Replace(src, []byte("\tEDGE(EXPIRED, REFUND_PENDING, UNCHANGED);\n"), nil, 1)
	more := bytes.Replace(src, []byte("\t/* END TRANSITIONS */"), []byte("\tEDGE(CONFIRMED, REFUND_PENDING, RELEASED);\n\t/* END TRANSITIONS */"), 1)
	if got := len(modelEdges(t, less)); got != len(full)-1 {
		t.Errorf("without EXPIRED → REFUND_PENDING the parser reads %d edges, want %d", got, len(full)-1)
	}
	if _, ok := modelEdges(t, more)["CONFIRMED REFUND_PENDING"]; !ok {
		t.Error("an added edge CONFIRMED → REFUND_PENDING is not read")
	}
}
