package fault

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxFiredRecords bounds the faults a Registry remembers.
const MaxFiredRecords = 20000

// maxBody bounds control requests.
const maxBody = 1 << 20

// Registry holds the armed plan and decides, at each pass a program reports,
// which fault to inject. It serves the control protocol described in the
// package documentation. It is safe for concurrent use.
type Registry struct {
	now func() time.Time

	mu           sync.Mutex
	plan         Plan
	tried, fired []int64
	passes       map[Point]map[string]int64
	occurrences  map[Hit]int
	log          []Fired
	dropped      int64
}

// NewRegistry returns a Registry with nothing armed.
func NewRegistry() *Registry {
	r := &Registry{now: time.Now}
	r.resetLocked(Plan{})
	return r
}

// Arm validates p and makes it the armed plan, forgetting the counts and
// records of the previous one.
func (r *Registry) Arm(p Plan) error {
	if err := p.Validate(); err != nil {
		return err
	}
	p.Rules = slices.Clone(p.Rules)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resetLocked(p)
	return nil
}

// Disarm removes every rule and forgets the counts and records.
func (r *Registry) Disarm() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resetLocked(Plan{})
}

func (r *Registry) resetLocked(p Plan) {
	r.plan = p
	r.tried = make([]int64, len(p.Rules))
	r.fired = make([]int64, len(p.Rules))
	r.passes = map[Point]map[string]int64{}
	r.occurrences = map[Hit]int{}
	r.log = nil
	r.dropped = 0
}

// Decide counts the pass h and returns what to do there: the action of the
// first rule for h's point and function that fires, or None.
func (r *Registry) Decide(h Hit) Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.passes[h.Point] == nil {
		r.passes[h.Point] = map[string]int64{}
	}
	r.passes[h.Point][h.Function]++
	occurrence := r.occurrences[h]
	r.occurrences[h] = occurrence + 1
	for i, rule := range r.plan.Rules {
		if rule.Point != h.Point || (rule.Function != "" && rule.Function != h.Function) {
			continue
		}
		if rule.Times > 0 && r.fired[i] >= int64(rule.Times) {
			continue
		}
		r.tried[i]++
		if draw(r.plan.Seed, i, h, occurrence) >= rule.probability() {
			continue
		}
		r.fired[i]++
		f := Fired{Rule: i, Point: h.Point, Function: h.Function, Key: h.Key, Action: rule.Action, Occurrence: occurrence, At: r.now()}
		if len(r.log) < MaxFiredRecords {
			r.log = append(r.log, f)
		} else {
			r.dropped++
		}
		return Decision{Action: rule.Action, DelayMS: rule.DelayMS, Rule: i}
	}
	return Decision{Action: None, Rule: -1}
}

// draw is a number in [0, 1) determined by its arguments alone.
func draw(seed uint64, rule int, h Hit, occurrence int) float64 {
	sum := sha256.Sum256([]byte(strings.Join([]string{
		strconv.FormatUint(seed, 10), strconv.Itoa(rule), string(h.Point), h.Function, h.Key, strconv.Itoa(occurrence),
	}, "\x00")))
	return float64(binary.BigEndian.Uint64(sum[:8])>>11) / (1 << 53)
}

// State returns a snapshot of the armed plan, its counts and the faults
// fired.
func (r *Registry) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stateLocked()
}

// StateOf is State with Passes and Fired limited to the passes of one key
// (an event id, an idempotency key): how often each function handled that
// unit of work at each point. The rules' counts stay global.
func (r *Registry) StateOf(key string) State {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stateLocked()
	s.Passes = map[Point]map[string]int64{}
	for h, n := range r.occurrences {
		if h.Key != key {
			continue
		}
		if s.Passes[h.Point] == nil {
			s.Passes[h.Point] = map[string]int64{}
		}
		s.Passes[h.Point][h.Function] += int64(n)
	}
	fired := s.Fired[:0]
	for _, f := range s.Fired {
		if f.Key == key {
			fired = append(fired, f)
		}
	}
	s.Fired = fired
	return s
}

func (r *Registry) stateLocked() State {
	s := State{
		Seed: r.plan.Seed, Rules: make([]RuleState, len(r.plan.Rules)),
		Passes: make(map[Point]map[string]int64, len(r.passes)), Fired: slices.Clone(r.log), FiredDropped: r.dropped,
	}
	for p, byFunction := range r.passes {
		s.Passes[p] = maps.Clone(byFunction)
	}
	for i, rule := range r.plan.Rules {
		s.Rules[i] = RuleState{Rule: rule, Tried: r.tried[i], Fired: r.fired[i]}
	}
	if s.Fired == nil {
		s.Fired = []Fired{}
	}
	return s
}

// ServeHTTP serves the control protocol: GET (?key=K: StateOf(K)), POST (a
// Plan) and DELETE on any path not ending in /hit, and POST {point,
// function, key} on a path ending in /hit.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if strings.HasSuffix(req.URL.Path, "/hit") {
		if req.Method != http.MethodPost {
			writeError(w, http.StatusMethodNotAllowed, "use POST")
			return
		}
		var h Hit
		if err := decode(req.Body, &h); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, r.Decide(h))
		return
	}
	switch req.Method {
	case http.MethodGet:
		if req.URL.Query().Has("key") {
			writeJSON(w, http.StatusOK, r.StateOf(req.URL.Query().Get("key")))
			return
		}
		writeJSON(w, http.StatusOK, r.State())
	case http.MethodPost:
		var p Plan
		if err := decode(req.Body, &p); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		if err := r.Arm(p); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, r.State())
	case http.MethodDelete:
		r.Disarm()
		writeJSON(w, http.StatusOK, r.State())
	default:
		writeError(w, http.StatusMethodNotAllowed, "use GET, POST or DELETE")
	}
}

func decode(body io.Reader, v any) error {
	dec := json.NewDecoder(io.LimitReader(body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return errors.New("invalid JSON: more than one value")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
