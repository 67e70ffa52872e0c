package localcloud

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/clubdev/club/localcloud/internal/adversary"
	"github.com/clubdev/club/localcloud/internal/ddbfidelity"
	"github.com/clubdev/club/localcloud/internal/front"
	"github.com/clubdev/club/localcloud/internal/snsfix"
	"github.com/clubdev/club/localcloud/internal/sqsfix"
)

// AdversaryStats is what the adversary did (package adversary).
type AdversaryStats = adversary.Stats

// AdversaryBehaviour names one of the adversary's behaviours.
type AdversaryBehaviour = adversary.Behaviour

// Stats is a snapshot of what the local cloud's own machinery did, served at
// GET /_club/stats on the endpoint.
type Stats struct {
	Functions     map[string]any `json:"functions"`
	SQSMappings   map[string]any `json:"sqs_mappings"`
	StreamMapping map[string]any `json:"stream_mappings"`
	// Endpoint is what the endpoint did to make up for answers lost on
	// their way to a client (docs/local-cloud.md).
	Endpoint EndpointStats `json:"endpoint"`
	// Adversary is the adversary's seed, rates and what it did.
	Adversary AdversaryStats `json:"adversary"`
}

// EndpointStats count the endpoint's answers kept for SDK retries and for
// pollers' lost receives, and how many of each were used.
type EndpointStats struct {
	Retries   front.RetryStats    `json:"sdk_retries"`
	Receipts  front.ReceiptStats  `json:"receives"`
	Conflicts front.ConflictStats `json:"transaction_conflicts"`
	// DynamoDBFidelity counts the DynamoDB requests the local cloud refused
	// (by feature) and the answers it corrected (package ddbfidelity).
	DynamoDBFidelity ddbfidelity.Stats `json:"dynamodb_fidelity"`
	// SQS and SNS count the requests refused because the local cloud
	// cannot carry them out as AWS would, and the answers corrected
	// (packages sqsfix, snsfix).
	SQS sqsfix.Stats `json:"sqs"`
	SNS snsfix.Stats `json:"sns"`
}

// controlHandler serves the local cloud's own endpoints under /_club/:
// request counts (GET, and DELETE to reset), billed units (package
// billing: GET, PUT to switch on, DELETE to reset), the tables' stored bytes
// as DynamoDB bills storage (GET /_club/storage), stats, readiness, the age of a
// queue's oldest message read without receiving (package sqsage) and the
// fault-injection control (faults.go).
func (c *Cloud) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/_club/requests", c.counter)
	mux.Handle("/_club/units", c.meter)
	mux.HandleFunc("GET /_club/storage", func(w http.ResponseWriter, r *http.Request) {
		tables, err := c.meter.Storage(r.Context())
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"tables": tables})
	})
	faults := faultControl()
	mux.Handle("/_club/faults", faults)
	mux.Handle("/_club/faults/hit", faults)
	// DynamoDB transaction conflicts, off until a test switches them on.
	mux.Handle("/_club/dynamodb/conflicts", c.front.Conflicts())
	// The adversary: GET, PUT {"spec": "aws", "seed": n}, DELETE.
	if adversaryLayer {
		mux.Handle("/_club/adversary", c.adversary.Control())
	} else {
		mux.HandleFunc("/_club/adversary", func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				writeJSON(w, http.StatusOK, c.adversary.Stats())
				return
			}
			writeJSON(w, http.StatusNotImplemented, map[string]string{"error": "adversary: this local cloud was built without it (tag club_noadversary)"})
		})
	}
	mux.HandleFunc("GET /_club/queues/age", func(w http.ResponseWriter, r *http.Request) {
		if c.queueAges == nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting"})
			return
		}
		c.queueAges.Handler().ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /_club/stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, c.Stats())
	})
	mux.HandleFunc("GET /_club/health", func(w http.ResponseWriter, r *http.Request) {
		if !c.ready.Load() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return mux
}

// Stats returns counters of functions and event source mappings.
func (c *Cloud) Stats() Stats {
	s := Stats{Functions: map[string]any{}, SQSMappings: map[string]any{}, StreamMapping: map[string]any{}}
	if c.runtime != nil {
		for name, st := range c.runtime.Stats() {
			s.Functions[name] = st
		}
	}
	if c.front != nil {
		s.Endpoint = EndpointStats{Retries: c.front.RetryStats(), Receipts: c.front.ReceiptStats(), Conflicts: c.front.ConflictStats(),
			SQS: c.front.SQSFixStats(), SNS: c.front.SNSFixStats()}
	}
	if c.fidelity != nil {
		s.Endpoint.DynamoDBFidelity = c.fidelity.Stats()
	}
	s.Adversary = c.adversary.Stats()
	for key, p := range c.sqsPollers {
		s.SQSMappings[key] = p.Stats()
	}
	for key, p := range c.streamPollers {
		s.StreamMapping[key] = map[string]any{"stats": p.Stats(), "checkpoint": p.Checkpoint(), "lag": p.Lag()}
	}
	return s
}

// ErrReplayed is the error of CheckNoReplays.
var ErrReplayed = errors.New("the endpoint replayed answers to SDK retries")

// CheckNoReplays returns an error naming the calls whose SDK retry the
// endpoint answered with a kept answer instead of carrying it out again (the
// replay, docs/local-cloud.md). AWS makes no such accommodation — a retried
// SendMessageBatch sends twice there — and with the SDK mend
// (internal/sdkhttp) in every client no answer should be lost on its way, so
// the suites that run a whole stack call this at teardown: a replay means
// that a client went without the mend, or that a new way of losing answers
// appeared, and either hides locally what AWS would do.
func (c *Cloud) CheckNoReplays() error {
	if c.front == nil {
		return nil
	}
	st := c.front.RetryStats()
	if st.Replayed == 0 {
		return nil
	}
	calls := make([]string, 0, len(st.Calls))
	for call, n := range st.Calls {
		calls = append(calls, fmt.Sprintf("%s ×%d", call, n))
	}
	sort.Strings(calls)
	return fmt.Errorf("%w: %d retries of calls whose answer was lost were given the first answer (%s); "+
		"on AWS each would have been carried out again: is every SDK client built with the mend (internal/sdkhttp)?",
		ErrReplayed, st.Replayed, strings.Join(calls, ", "))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
