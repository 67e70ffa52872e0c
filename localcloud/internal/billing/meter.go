package billing

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/clubdev/club/localcloud/internal/httptee"
)

// Line is what one operation of one service was billed.
type Line struct {
	Service   string `json:"service"`
	Operation string `json:"operation"`
	// Requests are the calls made.
	Requests int64 `json:"requests"`
	// WriteUnits and ReadUnits are DynamoDB request units.
	WriteUnits float64 `json:"write_units,omitempty"`
	// IndexWriteUnits are the write units of the global secondary index
	// entries the writes put, changed or deleted.
	IndexWriteUnits float64 `json:"index_write_units,omitempty"`
	ReadUnits       float64 `json:"read_units,omitempty"`
	// Items are the DynamoDB items written or read (transactional ones
	// once).
	Items int64 `json:"items,omitempty"`
	// TransactionItems are the items written or read in transactions.
	TransactionItems int64 `json:"transaction_items,omitempty"`
	// Billed are SQS and SNS billed requests (64 KB chunks).
	Billed int64 `json:"billed,omitempty"`
}

type opKey struct{ service, operation string }

// Meter counts billed units. The zero value is not usable: see New.
type Meter struct {
	on     atomic.Bool
	engine http.Handler
	mu     sync.Mutex
	lines  map[opKey]*Line
	shapes map[string]*tableShape // by table name
}

// New returns a meter, switched off, that reads item images from engine
// (the DynamoDB engine's handler, reached without the meter).
func New(engine http.Handler) *Meter {
	return &Meter{engine: engine, lines: map[opKey]*Line{}, shapes: map[string]*tableShape{}}
}

// SetEngine sets the engine item images are read from.
func (m *Meter) SetEngine(engine http.Handler) { m.engine = engine }

// Enable switches counting on or off.
func (m *Meter) Enable(on bool) { m.on.Store(on) }

// Snapshot returns the lines sorted by service and operation.
func (m *Meter) Snapshot() []Line {
	m.mu.Lock()
	out := make([]Line, 0, len(m.lines))
	for _, l := range m.lines {
		out = append(out, *l)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Service != out[j].Service {
			return out[i].Service < out[j].Service
		}
		return out[i].Operation < out[j].Operation
	})
	return out
}

// Reset sets every count to zero.
func (m *Meter) Reset() {
	m.mu.Lock()
	m.lines = map[opKey]*Line{}
	m.mu.Unlock()
}

func (m *Meter) add(l Line) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := opKey{l.Service, l.Operation}
	t := m.lines[k]
	if t == nil {
		t = &Line{Service: l.Service, Operation: l.Operation}
		m.lines[k] = t
	}
	t.Requests++
	t.WriteUnits += l.WriteUnits
	t.IndexWriteUnits += l.IndexWriteUnits
	t.ReadUnits += l.ReadUnits
	t.Items += l.Items
	t.TransactionItems += l.TransactionItems
	t.Billed += l.Billed
}

// ServeHTTP is the control endpoint: GET answers {"enabled": bool,
// "units": [Line...]}, PUT {"enabled": bool} switches counting (and resets
// the counts), DELETE resets them.
func (m *Meter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"enabled": m.on.Load(), "units": m.Snapshot()})
	case http.MethodPut:
		var in struct {
			Enabled bool `json:"enabled"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, `{"error":"body must be {\"enabled\": true|false}"}`, http.StatusBadRequest)
			return
		}
		m.Reset()
		m.Enable(in.Enabled)
		w.WriteHeader(http.StatusNoContent)
	case http.MethodDelete:
		m.Reset()
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, PUT, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// Wrap returns next with the meter in front of it. Switched off, it only
// looks at an atomic flag.
func (m *Meter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !m.on.Load() || strings.HasPrefix(r.URL.Path, "/_") || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		service, operation := classify(r)
		if service == "" {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		if service == "sns" && operation == "" {
			form, _ := url.ParseQuery(string(body))
			operation = form.Get("Action")
		}
		line := Line{Service: service, Operation: operation}
		var before *writeImages
		if service == "dynamodb" {
			before = m.imagesBefore(operation, body)
		}
		tee := httptee.New(w, 0)
		next.ServeHTTP(tee, r)
		switch service {
		case "dynamodb":
			m.dynamoDB(&line, body, tee, before)
		case "sqs":
			sqsUnits(&line, body, tee)
		case "sns":
			line.Billed = snsUnits(operation, body)
		}
		m.add(line)
	})
}

// classify names the metered services' requests: DynamoDB and SQS by their
// JSON target, SNS by its credential scope (its operation is in the form,
// read later).
func classify(r *http.Request) (service, operation string) {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		prefix, op, _ := strings.Cut(t, ".")
		switch prefix {
		case "DynamoDB_20120810":
			return "dynamodb", op
		case "AmazonSQS":
			return "sqs", op
		}
		return "", ""
	}
	if strings.Contains(r.Header.Get("Authorization"), "/sns/aws4_request") {
		return "sns", ""
	}
	return "", ""
}
