package reliability

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/clubdev/club/internal/fault"
	"github.com/clubdev/club/localcloud"
)

// The report fills generated blocks of docs/reliability.md, between these
// markers; the prose around them is written by hand and kept.
const (
	markExercise1 = "exercise-1"
	markExercise2 = "exercise-2"
	markSoak      = "soak"
	// markSoakAdversary is the soak run with the adversary on (make
	// test-adversary), kept apart from the plain soak's block.
	markSoakAdversary = "soak-adversary"
	// markSoakMixed is the mixed soak (enrollments, purchases, exports and
	// a mail outage under heavy; make test-adversary).
	markSoakMixed = "soak-mixed"
)

func beginMark(name string) string { return "<!-- generated:" + name + " begin -->" }
func endMark(name string) string   { return "<!-- generated:" + name + " end -->" }

// boundaryRow is one observed row of exercise 1.
type boundaryRow struct {
	name, fault, repeats, recognised, observed string
}

type reportData struct {
	mu         sync.Mutex
	boundaries []boundaryRow
	sagaCases  []sagaRow
	soak       *soakResult
	// soakAdversary is the soak with the adversary on.
	soakAdversary *soakResult
	mixed         *mixedSoak
}

// report gathers what the run observed; TestMain writes it with -report.
var report reportData

func (r *reportData) addBoundary(row boundaryRow) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.boundaries = append(r.boundaries, row)
}

func (r *reportData) setSoak(res soakResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res.adversary.On {
		r.soakAdversary = &res
		return
	}
	r.soak = &res
}

func (r *reportData) setMixed(m *mixedSoak) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mixed = m
}

// write replaces the generated blocks of the markdown file at path with
// this run's observations. A block the run did not observe (a test
// filtered out with -run) is left as it is.
func (r *reportData) write(path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(r.boundaries) > 0 {
		if doc, err = replaceBlock(doc, markExercise1, r.exercise1()); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if len(r.sagaCases) > 0 {
		if doc, err = replaceBlock(doc, markExercise2, r.exercise2()); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if r.soak != nil {
		if doc, err = replaceBlock(doc, markSoak, r.soak.markdown()); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if r.soakAdversary != nil {
		if doc, err = replaceBlock(doc, markSoakAdversary, r.soakAdversary.markdown()); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if r.mixed != nil {
		if doc, err = replaceBlock(doc, markSoakMixed, r.mixed.markdown()); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return os.WriteFile(path, doc, 0o644)
}

func replaceBlock(doc []byte, name, content string) ([]byte, error) {
	begin, end := []byte(beginMark(name)), []byte(endMark(name))
	i, j := bytes.Index(doc, begin), bytes.Index(doc, end)
	if i < 0 || j < i {
		return nil, fmt.Errorf("no block %q (%s … %s)", name, begin, end)
	}
	var out bytes.Buffer
	out.Write(doc[:i+len(begin)])
	out.WriteString("\n" + content)
	out.Write(doc[j:])
	return out.Bytes(), nil
}

func (r *reportData) exercise1() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run with seed %d.\n\n", stack.seed)
	b.WriteString("| Boundary | Fault | Who repeats the work | Where the duplicate is recognised | Observed |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, row := range r.boundaries {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", row.name, row.fault, row.repeats, row.recognised, row.observed)
	}
	return b.String()
}

func (s *soakResult) markdown() string {
	var b strings.Builder
	if s.adversary.On {
		fmt.Fprintf(&b, "Run with seed %d: %d enrollments in %d classes by %d concurrent clients; the adversary at %s, no fault point armed "+
			"(the points count their passes).\n\n", s.seed, s.enrollments, s.classes, soakClients, s.adversary.Spec)
	} else {
		fmt.Fprintf(&b, "Run with seed %d: %d enrollments in %d classes by %d concurrent clients; every point of the enrollment path armed at %.0f %% "+
			"(of the firings: %s).\n\n", s.seed, s.enrollments, s.classes, soakClients, soakRate*100, mixWords())
	}
	b.WriteString("| Point | Passes | Crashes | Errors | Delays |\n|---|---:|---:|---:|---:|\n")
	var passes int64
	total := map[fault.Action]int{}
	for _, p := range soakPoints {
		f := s.fired[p]
		fmt.Fprintf(&b, "| `%s` | %d | %d | %d | %d |\n", p, s.passes[p], f[fault.Crash], f[fault.Fail], f[fault.Delay])
		passes += s.passes[p]
		for a, n := range f {
			total[a] += n
		}
	}
	fired := total[fault.Crash] + total[fault.Fail] + total[fault.Delay]
	fmt.Fprintf(&b, "| all | %d | %d | %d | %d |\n\n", passes, total[fault.Crash], total[fault.Fail], total[fault.Delay])
	fmt.Fprintf(&b, "%d faults in %d passes (%.1f %%).\n\n", fired, passes, 100*float64(fired)/float64(max(passes, 1)))
	events := int64(s.enrollments)
	fmt.Fprintf(&b, "| Observed | |\n|---|---|\n")
	fmt.Fprintf(&b, "| Answers | %d × 201; the clients repeated %d failed requests (5xx or no answer); %d answers were replays of a committed request |\n",
		s.enrollments, s.failedAnswers, s.replayed)
	fmt.Fprintf(&b, "| Deliveries | analytics %d, roster %d, notifier %d for %d events: %d, %d and %d repeats absorbed |\n",
		s.deliveries[0], s.deliveries[1], s.deliveries[2], events,
		int64(s.deliveries[0])-events, int64(s.deliveries[1])-events, int64(s.deliveries[2])-events)
	if len(s.deadLetters) == 0 {
		b.WriteString("| Dead letters | none |\n")
	} else {
		fmt.Fprintf(&b, "| Dead letters | %s; every one with a reason; %d redriven, then applied once |\n", deadLetterSummary(s.deadLetters), s.redriven)
	}
	fmt.Fprintf(&b, "| Owed mail left parked once quiet | %d |\n", s.parkedLeft)
	fmt.Fprintf(&b, "| Left outside a DLQ | none: outbox stream consumed, every outbox row published, consumer queues empty |\n")
	fmt.Fprintf(&b, "| Facts | %d enrollments, %d intents, one each; every counter equals its class's enrollments; every roster lists its students once; %d mails, one per enrollment, all `sent` |\n",
		s.enrollments, s.enrollments, s.enrollments)
	fmt.Fprintf(&b, "| Time | all answered after %s; quiet after %s |\n", s.answered.Round(time.Second), s.settled.Round(time.Second))
	if s.adversary.On {
		fmt.Fprintf(&b, "\nThe adversary was on (%s, seed %s): what it did during the whole run, the soak included.\n\n", s.adversary.Spec, s.adversary.Seed)
		b.WriteString("| Behaviour | Rate | Count |\n|---|---:|---:|\n")
		for _, name := range adversaryBehaviours(s.adversary) {
			fmt.Fprintf(&b, "| `%s` | %s | %d |\n", name, s.adversary.Rates[name], s.adversary.Counts[name])
		}
		fmt.Fprintf(&b, "| lost answers of calls AWS makes idempotent | | %d |\n", s.adversary.IdempotentRetries)
	}
	return b.String()
}

func mixWords() string {
	var parts []string
	for _, m := range soakMix {
		w := fmt.Sprintf("%.0f %% %s", m.share*100, m.action)
		if m.delay > 0 {
			w += fmt.Sprintf(" of %d ms", m.delay)
		}
		parts = append(parts, w)
	}
	return strings.Join(parts, ", ")
}

// adversaryBehaviours are the behaviours the adversary counts, by name.
func adversaryBehaviours(st localcloud.AdversaryStats) []localcloud.AdversaryBehaviour {
	names := make([]localcloud.AdversaryBehaviour, 0, len(st.Counts))
	for name := range st.Counts {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}
