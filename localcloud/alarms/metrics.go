package alarms

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Retention is how long Metrics keeps a datapoint: longer than any window
// an alarm of the template looks at (Period × EvaluationPeriods).
const Retention = 24 * time.Hour

// Metrics keeps the datapoints the local cloud's alarms are evaluated on,
// as CloudWatch keeps them: a metric is its namespace, its name and its
// exact set of dimensions, and holds timestamped values. It is fed by the
// functions' Embedded Metric Format log lines ([Metrics.PutEMF]) and by the
// evaluator's own readings of the service metrics ([Evaluator.Evaluate]).
// Safe for concurrent use.
type Metrics struct {
	mu     sync.Mutex
	series map[string][]datapoint // by metricKey
	puts   int
}

type datapoint struct {
	at    time.Time
	value float64
}

// NewMetrics returns an empty store.
func NewMetrics() *Metrics { return &Metrics{series: map[string][]datapoint{}} }

// metricKey identifies a metric: CloudWatch treats each distinct dimension
// set as a separate metric, so the key holds all of them, sorted.
func metricKey(namespace, name string, dims map[string]string) string {
	names := make([]string, 0, len(dims))
	for k := range dims {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(namespace + "\x00" + name)
	for _, k := range names {
		b.WriteString("\x00" + k + "=" + dims[k])
	}
	return b.String()
}

// Put records values of a metric at a time.
func (m *Metrics) Put(namespace, name string, dims map[string]string, at time.Time, values ...float64) {
	if len(values) == 0 {
		return
	}
	key := metricKey(namespace, name, dims)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.series == nil {
		m.series = map[string][]datapoint{}
	}
	s := m.series[key]
	for _, v := range values {
		s = append(s, datapoint{at: at, value: v})
	}
	m.series[key] = s
	if m.puts++; m.puts%1024 == 0 {
		m.prune(at.Add(-Retention))
	}
}

// prune drops the datapoints older than cutoff.
func (m *Metrics) prune(cutoff time.Time) {
	for key, s := range m.series {
		kept := slices.DeleteFunc(s, func(d datapoint) bool { return d.at.Before(cutoff) })
		if len(kept) == 0 {
			delete(m.series, key)
			continue
		}
		m.series[key] = kept
	}
}

// Statistics of one metric over a window.
type Statistics struct {
	SampleCount           int
	Sum, Minimum, Maximum float64
}

// Value is the named statistic (Maximum, Minimum, Sum, Average,
// SampleCount); ok is false for a statistic it does not know.
func (s Statistics) Value(statistic string) (v float64, ok bool) {
	switch statistic {
	case "Maximum":
		return s.Maximum, true
	case "Minimum":
		return s.Minimum, true
	case "Sum":
		return s.Sum, true
	case "Average":
		return s.Sum / float64(s.SampleCount), true
	case "SampleCount":
		return float64(s.SampleCount), true
	}
	return 0, false
}

// knownStatistic names the statistics Statistics.Value computes.
func knownStatistic(s string) bool {
	_, ok := Statistics{SampleCount: 1}.Value(s)
	return ok
}

// Window returns the statistics of the datapoints of a metric timestamped
// in (from, to]; ok is false when there is none (the period is missing).
func (m *Metrics) Window(namespace, name string, dims map[string]string, from, to time.Time) (s Statistics, ok bool) {
	key := metricKey(namespace, name, dims)
	m.mu.Lock()
	defer m.mu.Unlock()
	s.Minimum, s.Maximum = math.Inf(1), math.Inf(-1)
	for _, d := range m.series[key] {
		if !d.at.After(from) || d.at.After(to) {
			continue
		}
		s.SampleCount++
		s.Sum += d.value
		s.Minimum = min(s.Minimum, d.value)
		s.Maximum = max(s.Maximum, d.value)
	}
	return s, s.SampleCount > 0
}

// ErrNotEMF is returned by PutEMF for a line that is not an Embedded Metric
// Format object (most log lines are not).
var ErrNotEMF = errors.New("not an embedded metric format line")

// PutEMF records the metrics of one Embedded Metric Format line, as
// CloudWatch Logs extracts them
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html):
// every metric of every directive, once per dimension set, with the values
// of the dimensions and the metric (a number or an array of numbers) taken
// from the root of the object, at the line's _aws.Timestamp. It returns how
// many values it recorded.
func (m *Metrics) PutEMF(line []byte) (int, error) {
	if !strings.Contains(string(line), `"_aws"`) {
		return 0, ErrNotEMF
	}
	var root map[string]json.RawMessage
	if err := json.Unmarshal(line, &root); err != nil {
		return 0, ErrNotEMF
	}
	var meta struct {
		Timestamp         *int64 `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  string     `json:"Namespace"`
			Dimensions [][]string `json:"Dimensions"`
			Metrics    []struct {
				Name string `json:"Name"`
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	}
	if err := json.Unmarshal(root["_aws"], &meta); err != nil || meta.Timestamp == nil {
		return 0, fmt.Errorf("%w: _aws needs a Timestamp and CloudWatchMetrics", ErrNotEMF)
	}
	at := time.UnixMilli(*meta.Timestamp)
	str := func(key string) (string, bool) {
		var s string
		return s, json.Unmarshal(root[key], &s) == nil
	}
	n := 0
	for _, d := range meta.CloudWatchMetrics {
		for _, metric := range d.Metrics {
			values, err := emfValues(root[metric.Name])
			if err != nil {
				return n, fmt.Errorf("metric %s: %w", metric.Name, err)
			}
			sets := d.Dimensions
			if len(sets) == 0 {
				sets = [][]string{nil}
			}
			for _, set := range sets {
				dims := make(map[string]string, len(set))
				for _, k := range set {
					v, ok := str(k)
					if !ok {
						return n, fmt.Errorf("metric %s: dimension %s is not a string at the root", metric.Name, k)
					}
					dims[k] = v
				}
				m.Put(d.Namespace, metric.Name, dims, at, values...)
				n += len(values)
			}
		}
	}
	return n, nil
}

func emfValues(raw json.RawMessage) ([]float64, error) {
	if len(raw) == 0 {
		return nil, errors.New("no value at the root")
	}
	var one float64
	if err := json.Unmarshal(raw, &one); err == nil {
		return []float64{one}, nil
	}
	var many []float64
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf("value is neither a number nor an array of numbers: %s", raw)
	}
	return many, nil
}
