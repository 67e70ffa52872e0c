package emf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// ErrInvalid is wrapped by every validation error: the entry would be
// rejected (or silently dropped) by CloudWatch.
var ErrInvalid = errors.New("invalid embedded metric")

// Limits of the format.
const (
	// MaxValuesPerLine is the most samples one metric may carry in one line.
	MaxValuesPerLine = 100
	// MaxMetrics is the most metrics one line may define.
	MaxMetrics = 100
	// MaxDimensions is the most dimensions one dimension set may have.
	MaxDimensions = 30
)

// Unit is a CloudWatch metric unit.
type Unit string

// The units this code base uses; CloudWatch knows more.
const (
	Milliseconds Unit = "Milliseconds"
	Seconds      Unit = "Seconds"
	Count        Unit = "Count"
	None         Unit = "None"
)

// Metric is one named series of samples.
type Metric struct {
	Name   string
	Unit   Unit
	Values []float64
}

// Durations returns a metric in milliseconds (with sub-millisecond precision)
// with one sample per duration.
func Durations(name string, ds ...time.Duration) Metric {
	vs := make([]float64, len(ds))
	for i, d := range ds {
		vs[i] = float64(d) / float64(time.Millisecond)
	}
	return Metric{Name: name, Unit: Milliseconds, Values: vs}
}

// Counter returns a Count metric with the single sample n.
func Counter(name string, n int) Metric {
	return Metric{Name: name, Unit: Count, Values: []float64{float64(n)}}
}

// Entry is what one call to Emit reports: metrics sharing a namespace,
// dimensions and time.
type Entry struct {
	Namespace string
	// Dimensions are the dimension names and values; every metric of the
	// entry is reported under this one dimension set. Empty means no
	// dimensions.
	Dimensions map[string]string
	Metrics    []Metric
	// Properties are extra fields of the log line (ids, reasons): searchable
	// in the logs, not metrics. Values must be JSON-encodable.
	Properties map[string]any
	// Timestamp is when the samples were taken; zero means now.
	Timestamp time.Time
}

// Emit writes metrics under namespace and dims to w. It is shorthand for
// Entry{Namespace: namespace, Dimensions: dims, Metrics: metrics}.Emit(w).
func Emit(w io.Writer, namespace string, dims map[string]string, metrics []Metric) error {
	return Entry{Namespace: namespace, Dimensions: dims, Metrics: metrics}.Emit(w)
}

// Emit validates e and writes it to w as one or more lines (see the package
// documentation). It writes nothing when no metric has a sample.
func (e Entry) Emit(w io.Writer) error {
	lines, err := e.Encode()
	if err != nil {
		return err
	}
	for _, line := range lines {
		if _, err := w.Write(line); err != nil {
			return fmt.Errorf("write embedded metric: %w", err)
		}
	}
	return nil
}

// Encode validates e and returns its lines, each ending in a newline.
func (e Entry) Encode() ([][]byte, error) {
	if err := e.validate(); err != nil {
		return nil, err
	}
	metrics := slices.DeleteFunc(slices.Clone(e.Metrics), func(m Metric) bool { return len(m.Values) == 0 })
	if len(metrics) == 0 {
		return nil, nil
	}
	ts := e.Timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	dimNames := make([]string, 0, len(e.Dimensions))
	for name := range e.Dimensions {
		dimNames = append(dimNames, name)
	}
	slices.Sort(dimNames)

	var lines [][]byte
	for offset := 0; ; offset += MaxValuesPerLine {
		line, more, err := e.line(metrics, dimNames, ts, offset)
		if err != nil {
			return nil, err
		}
		lines = append(lines, line)
		if !more {
			return lines, nil
		}
	}
}

type directive struct {
	Namespace  string             `json:"Namespace"`
	Dimensions [][]string         `json:"Dimensions"`
	Metrics    []metricDefinition `json:"Metrics"`
}

type metricDefinition struct {
	Name string `json:"Name"`
	Unit Unit   `json:"Unit,omitempty"`
}

type metadata struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// line encodes the samples [offset, offset+MaxValuesPerLine) of every metric;
// more reports whether any metric has samples beyond them.
func (e Entry) line(metrics []Metric, dimNames []string, ts time.Time, offset int) (line []byte, more bool, err error) {
	root := make(map[string]any, len(e.Properties)+len(e.Dimensions)+len(metrics)+1)
	for k, v := range e.Properties {
		root[k] = v
	}
	for k, v := range e.Dimensions {
		root[k] = v
	}
	d := directive{Namespace: e.Namespace, Dimensions: [][]string{dimNames}}
	for _, m := range metrics {
		if offset >= len(m.Values) {
			continue
		}
		chunk := m.Values[offset:min(offset+MaxValuesPerLine, len(m.Values))]
		more = more || offset+MaxValuesPerLine < len(m.Values)
		d.Metrics = append(d.Metrics, metricDefinition{Name: m.Name, Unit: m.Unit})
		if len(chunk) == 1 {
			root[m.Name] = chunk[0]
		} else {
			root[m.Name] = chunk
		}
	}
	root["_aws"] = metadata{Timestamp: ts.UnixMilli(), CloudWatchMetrics: []directive{d}}
	b, err := json.Marshal(root)
	if err != nil {
		return nil, false, fmt.Errorf("%w: encode: %v", ErrInvalid, err)
	}
	return append(b, '\n'), more, nil
}

func (e Entry) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...))
	}
	switch {
	case e.Namespace == "":
		bad("empty namespace")
	case len(e.Namespace) > 255:
		bad("namespace longer than 255 characters")
	case strings.HasPrefix(strings.ToUpper(e.Namespace), "AWS/"):
		bad("namespace %q is reserved for AWS", e.Namespace)
	}
	if len(e.Dimensions) > MaxDimensions {
		bad("%d dimensions (at most %d)", len(e.Dimensions), MaxDimensions)
	}
	if len(e.Metrics) > MaxMetrics {
		bad("%d metrics (at most %d)", len(e.Metrics), MaxMetrics)
	}
	// Dimensions, metrics and properties share the line's top-level keys.
	used := map[string]string{"_aws": "reserved"}
	claim := func(name, what string) {
		if name == "" {
			bad("empty %s name", what)
			return
		}
		if prev, ok := used[name]; ok {
			bad("%s name %q is already used by a %s", what, name, prev)
			return
		}
		used[name] = what
	}
	for name, value := range e.Dimensions {
		claim(name, "dimension")
		if value == "" {
			bad("dimension %q has an empty value", name)
		}
	}
	for _, m := range e.Metrics {
		claim(m.Name, "metric")
		for _, v := range m.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				bad("metric %q has the non-finite value %v", m.Name, v)
				break
			}
		}
	}
	for name := range e.Properties {
		claim(name, "property")
	}
	return errors.Join(errs...)
}
