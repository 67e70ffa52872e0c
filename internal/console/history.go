package console

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// history keeps the charts' samples: what Status said, every SampleEvery,
// for the last hour. It starts with the console: on a stack on AWS the
// CloudWatch metrics go further back (clubctl status reads their latest
// value), but the charts show what this console saw.
type history struct {
	mu     sync.Mutex
	window time.Duration
	points []point
}

type point struct {
	At     time.Time             `json:"at"`
	Queues map[string]queuePoint `json:"queues"`
	// OutboxUnpublished and OutboxAgeSeconds: nil when not read.
	OutboxUnpublished *int                   `json:"outbox_unpublished"`
	OutboxAgeSeconds  *float64               `json:"outbox_oldest_age_seconds"`
	Streams           map[string]streamPoint `json:"streams"`
}

type queuePoint struct {
	Visible  int64    `json:"visible"`
	InFlight int64    `json:"in_flight"`
	Age      *float64 `json:"oldest_age_seconds"`
	MaxAge   *float64 `json:"max_age_seconds"`
	DLQ      *int64   `json:"dlq_depth"`
}

type streamPoint struct {
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
	p := point{At: doc.At, Queues: map[string]queuePoint{}, Streams: map[string]streamPoint{}}
	for _, q := range doc.Queues {
		p.Queues[q.Name] = queuePoint{Visible: q.Visible, InFlight: q.InFlight, Age: q.Age, MaxAge: q.MaxAge, DLQ: q.DLQ}
	}
	if doc.Outbox != nil {
		n := doc.Outbox.Unpublished
		p.OutboxUnpublished, p.OutboxAgeSeconds = &n, doc.Outbox.Age
	}
	for _, s := range doc.Streams {
		p.Streams[s.Consumer] = streamPoint{Records: s.Records, Age: s.Age}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.points = append(h.points, p)
	cut := 0
	for cut < len(h.points) && doc.At.Sub(h.points[cut].At) > h.window {
		cut++
	}
	h.points = h.points[cut:]
}

func (h *history) snapshot() map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return map[string]any{"window_seconds": h.window.Seconds(), "points": append([]point{}, h.points...)}
}

// sample reads the status every SampleEvery until ctx ends. A failed read
// leaves a gap in the charts.
func (c *Console) sample(ctx context.Context) {
	t := time.NewTicker(c.opts.SampleEvery)
	defer t.Stop()
	for {
		if v, err := c.src.Status(ctx); err == nil {
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
