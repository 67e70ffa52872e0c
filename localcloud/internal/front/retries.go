package front

import (
	"container/list"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clubdev/club/localcloud/internal/httptee"
)

// The AWS SDKs name every call (one id for all its attempts) and number its
// attempts.
const (
	invocationIDHeader = "Amz-Sdk-Invocation-Id"
	attemptHeader      = "Amz-Sdk-Request" // "attempt=2; max=3"
)

const (
	// answerKeep is how long an answer is kept for a retry: an SDK retries
	// within seconds (its backoff is at most 20 s an attempt).
	answerKeep = 2 * time.Minute
	// answersMaxBytes bounds the memory the kept answers hold in all (see
	// answer.memory); the oldest go first.
	answersMaxBytes = 64 << 20
	// answerOverhead is what one kept answer holds besides its body and
	// header: the answer, its list element, its map entry and its key.
	answerOverhead = 256
)

// answers keeps the successful answers of the calls SDKs make through the
// front, by invocation id, so that a retry of a call that was answered is
// given the same answer instead of being carried out a second time.
//
// Why: on this machine a client now and then loses an answer that the
// front wrote whole (its read fails with "use of closed network
// connection", docs/local-cloud.md). The SDK retries that error, and a
// retried SendMessageBatch sends every message twice, a retried
// ReceiveMessage hides the first answer's messages for their visibility
// timeout, a retried TransactWriteItems fails its own condition. The first
// answer is what the caller should have had, so the retry gets it.
//
// Only 2xx answers of attempts the front saw through to the end are kept;
// a retry whose first attempt never arrived or failed goes through as
// usual.
type answers struct {
	mu    sync.Mutex
	byKey map[string]*list.Element
	order *list.List // of *answer, oldest first
	bytes int        // the memory the kept answers hold
	max   int        // the bound on bytes
	now   func() time.Time
	log   *slog.Logger
	// off, when set and true, turns the replay off: a retry of an answered
	// call is carried out again, as AWS carries it out (see ReplayUnless).
	off func() bool

	recorded, replayed, carriedOut int64
	replayedCalls                  map[string]int64
}

type answer struct {
	key    string
	at     time.Time
	status int
	header http.Header
	body   []byte
	memory int // counted against the bound when kept
}

// memoryOf is what an answer holds: its body's buffer as allocated (the
// tee grows it by doubling, so its capacity can be twice the body), its
// header's names and values, its key, and the bookkeeping around it.
func memoryOf(ans *answer) int {
	n := cap(ans.body) + len(ans.key) + answerOverhead
	for k, vs := range ans.header {
		n += len(k)
		for _, v := range vs {
			n += len(v)
		}
	}
	return n
}

// RetryStats says how many answers the front kept and how many SDK retries
// it answered with a kept answer, and which calls those were ("sqs
// SendMessageBatch": how many). A replay is an accommodation AWS does not
// make — a retried call is carried out again there — so the suites that run
// a whole stack fail when Replayed is not 0, naming the calls.
type RetryStats struct {
	Recorded int64            `json:"recorded"`
	Replayed int64            `json:"replayed"`
	Calls    map[string]int64 `json:"replayed_calls,omitempty"`
	// CarriedOut counts retries of answered calls that were carried out
	// again because the replay was off (ReplayUnless).
	CarriedOut int64 `json:"carried_out_again"`
}

// ReplayUnless turns the replay of answered calls' retries off while off()
// is true: the local cloud's adversary, which loses answers on purpose,
// wants each retry carried out again as AWS would (AWS's own idempotency,
// TransactWriteItems' ClientRequestToken and StartExecution's name, is the
// engines' and the stream recorder's to give). Call it before serving.
func (f *Front) ReplayUnless(off func() bool) { f.answers.off = off }

func newAnswers() *answers {
	return &answers{byKey: map[string]*list.Element{}, order: list.New(), max: answersMaxBytes, now: time.Now,
		log: slog.New(slog.DiscardHandler), replayedCalls: map[string]int64{}}
}

// callKey is the invocation id with what the call is: a retry repeats both.
func callKey(r *http.Request, id string) string {
	return id + " " + r.Method + " " + r.URL.Path + " " + r.Header.Get("X-Amz-Target")
}

// attempt is the attempt number the SDK gave the request, 1 when it gave
// none.
func attempt(r *http.Request) int {
	for _, part := range strings.Split(r.Header.Get(attemptHeader), ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "attempt="); ok {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
	}
	return 1
}

// serve answers a retry of an answered call with its answer, and otherwise
// lets next answer and keeps a successful answer.
func (a *answers) serve(op Op, next http.Handler, w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(invocationIDHeader)
	if id == "" {
		next.ServeHTTP(w, r)
		return
	}
	key := callKey(r, id)
	replay := a.off == nil || !a.off()
	if !replay && attempt(r) > 1 && a.answered(key) {
		a.mu.Lock()
		a.carriedOut++
		a.mu.Unlock()
	}
	if replay && attempt(r) > 1 {
		if ans := a.lookup(key, op); ans != nil {
			a.log.Info("an SDK retried a call whose answer was lost on its way; the retry gets the first answer",
				"call", r.Header.Get("X-Amz-Target"), "path", r.URL.Path, "attempt", attempt(r))
			for k, v := range ans.header {
				w.Header()[k] = v
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(ans.body)))
			w.WriteHeader(ans.status)
			_, _ = w.Write(ans.body)
			return
		}
	}
	tee := httptee.New(w, maxAnswerBytes)
	next.ServeHTTP(tee, r)
	status := tee.Status()
	if status/100 == 2 && !tee.Truncated {
		a.keep(&answer{key: key, status: status, header: tee.Header().Clone(), body: tee.Body.Bytes()})
	}
}

func (a *answers) lookup(key string, op Op) *answer {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expireLocked()
	el, ok := a.byKey[key]
	if !ok {
		return nil
	}
	a.replayed++
	a.replayedCalls[op.Service+" "+op.Operation]++
	return el.Value.(*answer)
}

// answered reports whether an answer of the call is kept, without
// replaying it.
func (a *answers) answered(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expireLocked()
	_, ok := a.byKey[key]
	return ok
}

func (a *answers) keep(ans *answer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ans.at = a.now()
	if old, ok := a.byKey[ans.key]; ok {
		a.removeLocked(old)
	}
	a.byKey[ans.key] = a.order.PushBack(ans)
	ans.memory = memoryOf(ans)
	a.bytes += ans.memory
	a.recorded++
	a.expireLocked()
}

func (a *answers) expireLocked() {
	cutoff := a.now().Add(-answerKeep)
	for el := a.order.Front(); el != nil; el = a.order.Front() {
		ans := el.Value.(*answer)
		if ans.at.After(cutoff) && a.bytes <= a.max {
			return
		}
		a.removeLocked(el)
	}
}

func (a *answers) removeLocked(el *list.Element) {
	ans := a.order.Remove(el).(*answer)
	delete(a.byKey, ans.key)
	a.bytes -= ans.memory
}

func (a *answers) snapshot() RetryStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	calls := make(map[string]int64, len(a.replayedCalls))
	for k, v := range a.replayedCalls {
		calls[k] = v
	}
	return RetryStats{Recorded: a.recorded, Replayed: a.replayed, Calls: calls, CarriedOut: a.carriedOut}
}
