package sqsconsumer

import (
	"context"
	"time"

	"github.com/clubdev/club/internal/emf"
	"github.com/clubdev/club/internal/obs"
)

// Metric names (namespace obs.MetricsNamespace, dimension obs.DimFunction).
const (
	// MetricQueueWait is now − SentTimestamp per message, in milliseconds.
	MetricQueueWait    = "QueueWait"
	MetricAcknowledged = "MessagesAcknowledged"
	MetricDuplicates   = "DuplicateDeliveries"
	MetricRetried      = "MessagesRetried"
	MetricDeadLettered = "MessagesDeadLettered"
)

func (c *Consumer) emitBatchMetrics(ctx context.Context, outcomes []outcome) {
	var waits []time.Duration
	var acked, dups, retried, dead int
	for _, o := range outcomes {
		if o.queueWait > 0 {
			waits = append(waits, o.queueWait)
		}
		switch {
		case o.deadLettered:
			dead++
		case o.failed || o.requeued:
			retried++
		default:
			acked++
			if o.verdict.Duplicate {
				dups++
			}
		}
	}
	err := emf.Entry{
		Namespace:  obs.MetricsNamespace,
		Dimensions: map[string]string{obs.DimFunction: c.cfg.Name},
		Metrics: []emf.Metric{
			emf.Durations(MetricQueueWait, waits...),
			emf.Counter(MetricAcknowledged, acked),
			emf.Counter(MetricDuplicates, dups),
			emf.Counter(MetricRetried, retried),
			emf.Counter(MetricDeadLettered, dead),
		},
		Timestamp: c.cfg.Now(),
	}.Emit(c.cfg.Metrics)
	if err != nil {
		c.log.WarnContext(ctx, "could not emit metrics", obs.Err(err))
	}
}
