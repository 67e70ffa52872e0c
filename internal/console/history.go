package console

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// history keeps the charts' samples for the last hour: what
// Source.PastHour says of the time before the console started (CloudWatch's
// one-minute metrics on AWS; nothing on the local cloud, which publishes
// none), then what Gauges says every SampleEvery.
type history struct {
	mu     sync.Mutex
	window time.Duration
	points []Sample
}

// Sample is the state of the stack at one time, as the charts draw it.
type Sample struct {
	At time.Time `json:"at"`
	// Queues by name.
	Queues map[string]QueueSample `json:"queues"`
	// OutboxUnpublished and OutboxAgeSeconds: nil when not read.
	OutboxUnpublished *int     `json:"outbox_unpublished"`
	OutboxAgeSeconds  *float64 `json:"outbox_oldest_age_seconds"`
	// Streams by consumer.
	Streams map[string]StreamSample `json:"streams"`
	// Source is "console" (Status, sampled) or "cloudwatch" (PastHour).
	Source string `json:"source"`
}

// QueueSample is one queue's numbers; nil: not known at that time.
type QueueSample struct {
	Visible  int64    `json:"visible"`
	InFlight int64    `json:"in_flight"`
	Age      *float64 `json:"oldest_age_seconds"`
	MaxAge   *float64 `json:"max_age_seconds"`
	DLQ      *int64   `json:"dlq_depth"`
}

// StreamSample is one stream consumer's lag; nil: not known.
type StreamSample struct {
	Records *uint64  `json:"records_behind"`
	Age     *float64 `json:"iterator_age_seconds"`
}

// statusDoc is the part of clubctl status --json the charts draw.
type statusDoc struct {
	At     time.Time `json:"at"`
	Queues []struct {
		Name     string   `json:"name"`
		Visible  int64    `json:"visible"`
		InFlight int64    `json:"in_flight"`
		Age      *float64 `json:"oldest_age_seconds"`
		MaxAge   *float64 `json:"max_age_seconds"`
		DLQ      *int64   `json:"dlq_depth"`
	} `json:"queues"`
	Outbox *struct {
		Unpublished int      `json:"unpublished"`
		Age         *float64 `json:"oldest_age_seconds"`
	} `json:"outbox"`
	Streams []struct {
		Consumer string   `json:"consumer"`
		Records  *uint64  `json:"records_behind"`
		Age      *float64 `json:"iterator_age_seconds"`
	} `json:"streams"`
}

func newHistory(window time.Duration) *history { return &history{window: window} }

func (h *history) add(doc statusDoc) {
	p := Sample{At: doc.At, Queues: map[string]QueueSample{}, Streams: map[string]StreamSample{}, Source: "console"}
	for _, q := range doc.Queues {
		p.Queues[q.Name] = QueueSample{Visible: q.Visible, InFlight: q.InFlight, Age: q.Age, MaxAge: q.MaxAge, DLQ: q.DLQ}
	}
	if doc.Outbox != nil {
		n := doc.Outbox.Unpublished
		p.OutboxUnpublished, p.OutboxAgeSeconds = &n, doc.Outbox.Age
	}
	for _, s := range doc.Streams {
		p.Streams[s.Consumer] = StreamSample{Records: s.Records, Age: s.Age}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.points = append(h.points, p)
	h.trim(p.At)
}

// seed puts samples from before the console started in front of its own.
func (h *history) seed(past []Sample, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var first time.Time
	if len(h.points) > 0 {
		first = h.points[0].At
	}
	var keep []Sample
	for _, p := range past {
		if first.IsZero() || p.At.Before(first) {
			keep = append(keep, p)
		}
	}
	slices.SortFunc(keep, func(a, b Sample) int { return a.At.Compare(b.At) })
	h.points = append(keep, h.points...)
	h.trim(now)
}

// trim drops the samples older than the window before now.
func (h *history) trim(now time.Time) {
	cut := 0
	for cut < len(h.points) && now.Sub(h.points[cut].At) > h.window {
		cut++
	}
	h.points = h.points[cut:]
}

func (h *history) snapshot() map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return map[string]any{"window_seconds": h.window.Seconds(), "points": append([]Sample{}, h.points...)}
}

// sample reads the past hour once, then the status every SampleEvery until
// ctx ends. A failed read leaves a gap in the charts.
func (c *Console) sample(ctx context.Context) {
	c.wg.Add(1) // the caller's Add keeps the count above zero
	go func() {
		defer c.wg.Done()
		if past, err := c.src.PastHour(ctx); err == nil {
			c.history.seed(past, c.opts.Now())
		}
	}()
	t := time.NewTicker(c.opts.SampleEvery)
	defer t.Stop()
	for {
		if v, err := c.src.Gauges(ctx); err == nil {
			if raw, err := json.Marshal(v); err == nil {
				var doc statusDoc
				if json.Unmarshal(raw, &doc) == nil {
					c.history.add(doc)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
