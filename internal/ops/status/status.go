package status

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clubdev/club/internal/ops/queues"
)

// SQS is the part of *sqs.Client that Collect uses.
type SQS interface {
	queues.AttributesAPI
	queues.PeekAPI
}

// PurchaseCounter counts purchases by business status (docs/principles.md §6); see
// PurchaseScan.
type PurchaseCounter interface {
	CountByStatus(ctx context.Context) (map[string]int, error)
}

// AttentionStatuses are the purchase statuses a person must look at.
var AttentionStatuses = []string{"checking_payment", "needs_reconciliation"}

// QueueStatus is one queue's line of the report.
type QueueStatus struct {
	Queue queues.Queue
	// Depth is the first sample, taken before any peek.
	Depth queues.Depth
	Age   queues.Age
	// Breached is true when Age exceeds the queue's class limit.
	Breached bool
	// DLQDepth is nil for a queue without a dead-letter queue.
	DLQDepth *queues.Depth
	// Drain is zero when no second sample was taken.
	Drain queues.Drain
}

// Purchases is the purchase section of the report.
type Purchases struct {
	// Deployed is true when the stack has a state machine (the saga).
	Deployed bool
	ByStatus map[string]int
	// Note explains a missing count.
	Note string
}

// Report is what status shows.
type Report struct {
	At     time.Time
	Queues []QueueStatus
	// Outbox is nil when the stack has no outbox table.
	Outbox    *Outbox
	Streams   []StreamLag
	Purchases Purchases
	// Alarms are the alarms in state ALARM; AlarmsRead is false when no
	// CloudWatch was asked.
	Alarms     []Alarm
	AlarmsRead bool
	// Problems are the sections that could not be read; the rest of the
	// report stands.
	Problems []string
}

// Collector gathers a Report. Only SQS and Ages are required.
type Collector struct {
	SQS  SQS
	Ages *queues.AgeProber
	// DynamoDB and OutboxTable give the outbox section.
	DynamoDB    Scanner
	OutboxTable string
	Streams     StreamLagReader
	// SagaDeployed says the stack has a state machine (the saga); Purchases
	// counts its purchases (nil: nothing to count them in).
	SagaDeployed bool
	Purchases    PurchaseCounter
	// Alarms reads the alarms' states (nil: not shown); OpsTopicARN keeps
	// the stack's own (see ReadAlarms).
	Alarms      AlarmDescriber
	OpsTopicARN string
	// Sample is the time between the two depth samples the drain rate comes
	// from; 0 takes one sample and measures no drain.
	Sample time.Duration
	Now    func() time.Time
}

// Collect reads every section. It fails only when the queues cannot be
// read; any other section that fails is named in Report.Problems.
func (c *Collector) Collect(ctx context.Context, cat *queues.Catalog) (*Report, error) {
	r := &Report{At: c.Now().UTC()}
	started := time.Now()
	for _, q := range cat.Queues() {
		d, err := queues.GetDepth(ctx, c.SQS, q.URL)
		if err != nil {
			return nil, fmt.Errorf("queue %s: %w", q.Name, err)
		}
		qs := QueueStatus{Queue: q, Depth: d}
		if q.DLQURL != "" {
			dd, err := queues.GetDepth(ctx, c.SQS, q.DLQURL)
			if err != nil {
				return nil, fmt.Errorf("queue %s: %w", q.DLQName, err)
			}
			qs.DLQDepth = &dd
		}
		r.Queues = append(r.Queues, qs)
	}
	for i := range r.Queues {
		qs := &r.Queues[i]
		age, err := c.Ages.OldestAge(ctx, qs.Queue.URL, qs.Depth)
		if err != nil {
			return nil, fmt.Errorf("queue %s: %w", qs.Queue.Name, err)
		}
		qs.Age = age
		qs.Breached = age.Known() && qs.Queue.Breaches(age.Oldest)
	}

	if c.DynamoDB != nil && c.OutboxTable != "" {
		o, err := ReadOutbox(ctx, c.DynamoDB, c.OutboxTable, c.Now())
		if err != nil {
			r.Problems = append(r.Problems, err.Error())
		} else {
			r.Outbox = &o
		}
	}
	if c.Streams != nil {
		lags, err := c.Streams.StreamLags(ctx)
		if err != nil {
			r.Problems = append(r.Problems, err.Error())
		}
		r.Streams = lags
	}
	r.Purchases = c.purchases(ctx, r)
	if c.Alarms != nil {
		alarms, err := ReadAlarms(ctx, c.Alarms, c.OpsTopicARN)
		if err != nil {
			r.Problems = append(r.Problems, err.Error())
		} else {
			r.Alarms, r.AlarmsRead = alarms, true
		}
	}

	if c.Sample > 0 {
		if err := sleepUntil(ctx, started.Add(c.Sample)); err != nil {
			return nil, err
		}
		elapsed := time.Since(started)
		for i := range r.Queues {
			qs := &r.Queues[i]
			d, err := queues.GetDepth(ctx, c.SQS, qs.Queue.URL)
			if err != nil {
				return nil, fmt.Errorf("queue %s: %w", qs.Queue.Name, err)
			}
			qs.Drain = queues.MeasureDrain(qs.Depth, d, elapsed)
		}
	}
	return r, nil
}

func (c *Collector) purchases(ctx context.Context, r *Report) Purchases {
	switch {
	case !c.SagaDeployed:
		return Purchases{Note: "saga not deployed"}
	case c.Purchases == nil:
		return Purchases{Deployed: true, Note: "not counted: the stack file names no club table"}
	}
	counts, err := c.Purchases.CountByStatus(ctx)
	if err != nil {
		r.Problems = append(r.Problems, fmt.Sprintf("count purchases: %v", err))
		return Purchases{Deployed: true, Note: "could not count purchases"}
	}
	return Purchases{Deployed: true, ByStatus: counts}
}

// Incomplete returns an error naming the problems, or nil.
func (r *Report) Incomplete() error {
	if len(r.Problems) == 0 {
		return nil
	}
	errs := make([]error, len(r.Problems))
	for i, p := range r.Problems {
		errs[i] = errors.New(p)
	}
	return fmt.Errorf("status incomplete: %w", errors.Join(errs...))
}

func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
