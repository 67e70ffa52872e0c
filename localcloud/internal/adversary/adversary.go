package adversary

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Adversary decides, from one seed, when each behaviour happens, and counts
// what happened. The zero rates (New's default) make it do nothing; its
// methods are safe for concurrent use.
type Adversary struct {
	mu    sync.RWMutex
	seed  uint64
	spec  string
	rates map[Behaviour]float64
	// draws is each behaviour's next draw: the n-th decision of a behaviour
	// depends only on the seed, the behaviour and n.
	draws map[Behaviour]*atomic.Uint64
	// shown is set once a behaviour's first decision since Set was taken:
	// that decision fires whatever the draw, so a run of any length and any
	// seed shows every behaviour with a rate above 0 at least once.
	shown map[Behaviour]*atomic.Bool
	// on is set while some rate is above 0: the seams then do their work,
	// otherwise they pass calls through untouched.
	on atomic.Bool

	counts map[Behaviour]*atomic.Int64
	// idempotentRetries counts lost answers of calls AWS makes idempotent
	// (TransactWriteItems with a ClientRequestToken, StartExecution): their
	// retry gets AWS's idempotent answer from the local cloud, not a replay.
	idempotentRetries atomic.Int64

	// Staleness is how far behind a stale read or an index may be.
	Staleness time.Duration
	now       func() time.Time
	// engine is the engine's own handler (see Handler).
	engine http.Handler
	// handles are the message ids of received receipt handles, for
	// SQSRedeliver.
	handles  *handles
	versions *versions
}

// DefaultStaleness is how long after a write a read without ConsistentRead
// may still miss it: DynamoDB says its copies are usually consistent within
// a second.
const DefaultStaleness = time.Second

// New returns an adversary with the seed and every rate 0.
func New(seed uint64) *Adversary {
	a := &Adversary{seed: seed, rates: map[Behaviour]float64{}, draws: map[Behaviour]*atomic.Uint64{},
		shown:  map[Behaviour]*atomic.Bool{},
		counts: map[Behaviour]*atomic.Int64{}, Staleness: DefaultStaleness, now: time.Now}
	for _, b := range Behaviours {
		a.draws[b] = new(atomic.Uint64)
		a.shown[b] = new(atomic.Bool)
		a.counts[b] = new(atomic.Int64)
	}
	a.versions = newVersions(a)
	a.handles = newHandles()
	return a
}

// Seed is the seed the adversary decides from.
func (a *Adversary) Seed() uint64 {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.seed
}

// On reports whether some behaviour has a rate above 0.
func (a *Adversary) On() bool { return a != nil && a.on.Load() }

// Set replaces the rates with those spec gives (see Parse) and, when seed
// is not 0, the seed; the draws start again from the first.
func (a *Adversary) Set(spec string, seed uint64) error {
	rates, err := Parse(spec)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if seed != 0 {
		a.seed = seed
	}
	a.spec, a.rates = spec, rates
	for _, d := range a.draws {
		d.Store(0)
	}
	for _, f := range a.shown {
		f.Store(false)
	}
	on := false
	for _, r := range rates {
		on = on || r > 0
	}
	a.on.Store(on)
	return nil
}

// Rate is the behaviour's rate.
func (a *Adversary) Rate(b Behaviour) float64 {
	if !a.On() {
		return 0
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.rates[b]
}

// Decide draws the behaviour's next decision: true with its rate, and true
// for the first decision of each behaviour with a rate above 0 (since Set),
// so that every path the rates allow shows in any run, whatever the seed:
// at a few percent, a behaviour with only a few chances in a short run
// (a Task of the one purchase, a schedule's fire) would otherwise show in
// some seeds and not in others. It is the one place that decides; it counts
// nothing (Count does, once the behaviour was carried out).
func (a *Adversary) Decide(b Behaviour) bool {
	rate := a.Rate(b)
	if rate <= 0 {
		return false
	}
	n := a.draws[b].Add(1) - 1
	if rate >= 1 || a.shown[b].CompareAndSwap(false, true) {
		return true
	}
	return a.unit(b, n) < rate
}

// Pick draws a number in [0, n) for a choice the behaviour makes (which
// item, which error), from the behaviour's sequence of draws.
func (a *Adversary) Pick(b Behaviour, n int) int {
	if n <= 1 {
		return 0
	}
	return int(a.unit(b, a.draws[b].Add(1)-1) * float64(n))
}

// unit is the n-th draw of b in [0, 1): splitmix64 of the seed, the
// behaviour and n.
func (a *Adversary) unit(b Behaviour, n uint64) float64 {
	a.mu.RLock()
	x := a.seed
	a.mu.RUnlock()
	for i := 0; i < len(b); i++ { // FNV-1a of the name
		x ^= uint64(b[i])
		x *= 1099511628211
	}
	x += (n + 1) * 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// Count records that the behaviour was carried out once.
func (a *Adversary) Count(b Behaviour) { a.counts[b].Add(1) }

// Stats is what the adversary did, served in /_club/stats.
type Stats struct {
	On    bool                 `json:"on"`
	Seed  string               `json:"seed"`
	Spec  string               `json:"spec,omitempty"`
	Rates map[Behaviour]string `json:"rates,omitempty"`
	// Counts is how many times each behaviour was carried out.
	Counts map[Behaviour]int64 `json:"counts"`
	// IdempotentRetries counts lost answers of calls AWS makes idempotent
	// (TransactWriteItems with ClientRequestToken, StartExecution with the
	// same name and input).
	IdempotentRetries int64 `json:"idempotent_retries"`
}

// Stats returns the adversary's settings and counts.
func (a *Adversary) Stats() Stats {
	a.mu.RLock()
	defer a.mu.RUnlock()
	s := Stats{On: a.on.Load(), Seed: strconv.FormatUint(a.seed, 10), Spec: a.spec, Counts: map[Behaviour]int64{},
		IdempotentRetries: a.idempotentRetries.Load()}
	for b, c := range a.counts {
		s.Counts[b] = c.Load()
	}
	if len(a.rates) > 0 {
		s.Rates = map[Behaviour]string{}
		for b, r := range a.rates {
			s.Rates[b] = strconv.FormatFloat(r, 'g', -1, 64)
		}
	}
	return s
}

// Profiles are named sets of rates. aws: what a busy region plausibly shows
// (a few percent); heavy: enough that every path fires many times in a
// short run.
var Profiles = map[string]map[Behaviour]float64{
	"aws": {
		SQSRedeliver: 0.02, SQSReorder: 0.1, SQSPartialReceive: 0.1, SNSDuplicate: 0.02,
		LambdaRedeliver: 0.02, LambdaAsyncRetry: 0.05, SFNTaskRerun: 0.05,
		DDBStaleRead: 0.1, DDBIndexLag: 0.1, DDBTransactionConflict: 0.02, DDBWriteConflict: 0.01,
		DDBThrottle: 0.01, LostAnswer: 0.01,
	},
	"heavy": {
		SQSRedeliver: 0.2, SQSReorder: 0.5, SQSPartialReceive: 0.5, SNSDuplicate: 0.2,
		LambdaRedeliver: 0.2, LambdaAsyncRetry: 0.3, SFNTaskRerun: 0.3,
		DDBStaleRead: 0.5, DDBIndexLag: 0.5, DDBTransactionConflict: 0.1, DDBWriteConflict: 0.05,
		DDBThrottle: 0.05, LostAnswer: 0.05,
	},
}

// Parse reads a spec: "" or "off" (nothing), a profile name, or
// comma-separated BEHAVIOUR=RATE entries, which may follow a profile
// ("aws,sqs.redeliver=0.5") and then replace its rate.
func Parse(spec string) (map[Behaviour]float64, error) {
	rates := map[Behaviour]float64{}
	known := map[Behaviour]bool{}
	for _, b := range Behaviours {
		known[b] = true
	}
	for i, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" || part == "off" {
			continue
		}
		name, value, isRate := strings.Cut(part, "=")
		if !isRate {
			p, ok := Profiles[name]
			if !ok || i > 0 {
				return nil, fmt.Errorf("adversary: %q is not a profile (%s) first, nor BEHAVIOUR=RATE", part, profileNames())
			}
			for b, r := range p {
				rates[b] = r
			}
			continue
		}
		b := Behaviour(strings.TrimSpace(name))
		if !known[b] {
			return nil, fmt.Errorf("adversary: unknown behaviour %q (known: %s)", b, behaviourNames())
		}
		r, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || math.IsNaN(r) || r < 0 || r > 1 {
			return nil, fmt.Errorf("adversary: the rate of %s must be a number from 0 to 1, not %q", b, value)
		}
		rates[b] = r
	}
	return rates, nil
}

func profileNames() string {
	names := make([]string, 0, len(Profiles))
	for n := range Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func behaviourNames() string {
	names := make([]string, len(Behaviours))
	for i, b := range Behaviours {
		names[i] = string(b)
	}
	return strings.Join(names, ", ")
}

// Control serves the adversary's settings at run time: GET the stats, PUT
// {"spec": "aws", "seed": 7} (seed optional) to set, DELETE to turn off.
func (a *Adversary) Control() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
		case http.MethodPut:
			var in struct {
				Spec string `json:"spec"`
				Seed uint64 `json:"seed"`
			}
			dec := json.NewDecoder(io.LimitReader(r.Body, 4<<10))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]string{"code": "invalid_settings",
					"message": `a JSON object {"spec": "PROFILE or BEHAVIOUR=RATE,...", "seed": n}: ` + err.Error()}})
				return
			}
			if err := a.Set(in.Spec, in.Seed); err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]string{"code": "invalid_settings", "message": err.Error()}})
				return
			}
		case http.MethodDelete:
			_ = a.Set("", 0)
		default:
			w.Header().Set("Allow", "GET, PUT, DELETE")
			writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": map[string]string{"code": "method_not_allowed", "message": "GET, PUT or DELETE"}})
			return
		}
		writeJSON(w, http.StatusOK, a.Stats())
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
