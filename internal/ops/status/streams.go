package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/clubdev/club/internal/ops/cwmetric"
)

// StreamLag is how far one stream consumer is behind its stream.
type StreamLag struct {
	// Consumer names the event source mapping: "<Function>.<Event>" on the
	// local cloud, the function name on AWS.
	Consumer string `json:"consumer"`
	// Records is how many stream records it has still to read (local cloud).
	Records *uint64 `json:"records_behind,omitempty"`
	// Age is the age of the last record it read (AWS IteratorAge).
	Age *time.Duration `json:"-"`
	// Source is "local" or "cloudwatch".
	Source string `json:"source"`
}

// StreamLagReader reports the lag of every stream consumer of a stack.
type StreamLagReader interface {
	StreamLags(ctx context.Context) ([]StreamLag, error)
}

// LocalStats reads stream lag from the local cloud's GET /_club/stats,
// whose stream_mappings hold, per "<Function>.<Event>", the number of
// records the mapping has not delivered yet ("lag").
type LocalStats struct {
	Endpoint string
	HTTP     *http.Client
}

var _ StreamLagReader = LocalStats{}

// StreamLags implements StreamLagReader.
func (l LocalStats) StreamLags(ctx context.Context) ([]StreamLag, error) {
	client := l.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	url := strings.TrimRight(l.Endpoint, "/") + "/_club/stats"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("stream lag: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("stream lag: GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("stream lag: GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	var stats struct {
		StreamMappings map[string]struct {
			Lag uint64 `json:"lag"`
		} `json:"stream_mappings"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		return nil, fmt.Errorf("stream lag: decode %s: %w", url, err)
	}
	var out []StreamLag
	for _, name := range slices.Sorted(maps.Keys(stats.StreamMappings)) {
		lag := stats.StreamMappings[name].Lag
		out = append(out, StreamLag{Consumer: name, Records: &lag, Source: "local"})
	}
	return out, nil
}

// IteratorAges reads stream lag on AWS: the AWS/Lambda IteratorAge metric of
// each function (the age of the last record its stream mappings read).
// Functions with no datapoint consume no stream and are left out.
type IteratorAges struct {
	CloudWatch cwmetric.CloudWatch
	// Functions are the stack's function names by logical id.
	Functions map[string]string
	Now       func() time.Time
}

var _ StreamLagReader = IteratorAges{}

// StreamLags implements StreamLagReader.
func (a IteratorAges) StreamLags(ctx context.Context) ([]StreamLag, error) {
	names := slices.Sorted(maps.Values(a.Functions))
	queries := make([]cwmetric.Query, len(names))
	for i, fn := range names {
		queries[i] = cwmetric.IteratorAge(fn)
	}
	points, err := cwmetric.Latest(ctx, a.CloudWatch, a.Now(), queries)
	if err != nil {
		return nil, fmt.Errorf("stream lag: %w", err)
	}
	var out []StreamLag
	for i, fn := range names {
		if p, ok := points[i]; ok {
			age := time.Duration(p.Value * float64(time.Millisecond))
			out = append(out, StreamLag{Consumer: fn, Age: &age, Source: "cloudwatch"})
		}
	}
	return out, nil
}
