package clubctl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/clubdev/club/internal/ops/queues"
	"github.com/clubdev/club/internal/ops/redrive"
)

type dlqRedriveOptions struct {
	queue  string
	batch  int
	rate   string
	max    int
	dryRun bool
	force  bool
	peek   bool
}

// dryRunLimit bounds the listing of a dry run without --max.
const dryRunLimit = 100

func newDLQRedriveCommand(g *Globals) *cobra.Command {
	var o dlqRedriveOptions
	cmd := &cobra.Command{
		Use:   "redrive --queue Q [--batch N] [--rate R/s] [--max M] [--dry-run] [--force] [--peek]",
		Short: "Move dead letters back to their queue: bounded, rate-limited, stoppable",
		Long: `redrive moves messages from a queue's DLQ back to the queue, in batches of --batch,
at most --rate messages per second, until the DLQ is empty or --max have moved, with
a progress bar on stderr. The consumer's dead-letter attributes (dlq_code,
dlq_reason, source_queue, original_message_id, receive_count) are removed; body and
the event's attributes (type, event_id) go back unchanged.

Ctrl-C stops it at any moment: the batch in hand (at most 10 messages) is finished
and nothing else starts, so every message is either back in the queue once or
still in the DLQ. Run the same command again to continue.

Each message is sent to the queue first and deleted from the DLQ second. If the
process dies between the two, the message is in both places and a later redrive
delivers it again: a duplicate, which the consumers absorb because their inbox
remembers each event_id. The other order would turn the same crash into a lost
message, which nothing can absorb.

It refuses (exit status 3) while the queue's oldest message is older than its
work class allows: live traffic is late already, and a redrive would make it later.
It checks again every 10 seconds while it runs and stops when the limit is
breached. --force skips the check. The age comes from a read that receives nothing:
CloudWatch on AWS, the local cloud's own record locally (--peek measures it from
message timestamps instead; see 'clubctl status --help' for what a peek costs).

--dry-run lists what would move and whether the check passes, and moves nothing.

Runbook: docs/runbooks/dlq-redrive.md. Check the cause first (clubctl dlq show),
redrive a bounded batch (--max 10), then the rest at a rate, watching
'clubctl status'.`,
		Example: `  # What would move?
  clubctl dlq redrive --queue notifications --dry-run

  # A bounded batch first, then the rest at 50 messages a second
  clubctl dlq redrive --queue notifications --max 10 --rate 5/s
  clubctl dlq redrive --queue notifications --rate 50/s

  # The queue is late but the dead letters must go back now
  clubctl dlq redrive --queue roster --rate 10/s --force`,
		Args:                  cobra.NoArgs,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			peekSet := cmd.Flags().Changed("peek")
			return runDLQRedrive(cmd, g, o, peekSet)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.queue, "queue", "", "the queue to move its dead letters back to (or its DLQ): a logical id or short name (required)")
	f.IntVar(&o.batch, "batch", 10, "messages per batch, 1 to 10")
	f.StringVar(&o.rate, "rate", "10/s", "most messages per second, like 50/s (0: no limit)")
	f.IntVar(&o.max, "max", 0, "most messages to move (0: all)")
	f.BoolVar(&o.dryRun, "dry-run", false, "list what would move; move nothing")
	f.BoolVar(&o.force, "force", false, "redrive even while the queue's oldest message breaches its class limit")
	f.BoolVar(&o.peek, "peek", false, "measure the queue's age from message timestamps where CloudWatch has none (each peek is a receive)")
	_ = cmd.MarkFlagRequired("queue")
	return cmd
}

type redriveOutput struct {
	Queue    string  `json:"queue"`
	DLQ      string  `json:"dlq"`
	Moved    int     `json:"moved"`
	Drained  bool    `json:"drained"`
	CameBack int     `json:"came_back"`
	Seconds  float64 `json:"seconds"`
	Stopped  string  `json:"stopped,omitempty"`
}

type redriveDryRunOutput struct {
	Queue      string       `json:"queue"`
	DLQ        string       `json:"dlq"`
	DLQDepth   int64        `json:"dlq_depth"`
	WouldMove  int          `json:"would_move"`
	Messages   []deadLetter `json:"messages"`
	Refused    string       `json:"refused,omitempty"`
	RatePerSec float64      `json:"rate_per_second"`
}

func runDLQRedrive(cmd *cobra.Command, g *Globals, o dlqRedriveOptions, peekSet bool) error {
	ctx := cmd.Context()
	rate, err := parseRate("--rate", o.rate)
	if err != nil {
		return err
	}
	if err := o.validate(); err != nil {
		return err
	}
	t, err := g.loadTarget(ctx)
	if err != nil {
		return err
	}
	// The local cloud knows its ages without a receive: peek only when asked.
	plan, err := g.planRedrive(ctx, t, o, rate, peekSet && o.peek)
	if err != nil {
		return err
	}
	q := plan.queue
	if o.dryRun {
		return redriveDryRun(ctx, g, t, q, o, rate, plan.depth, plan.opts.Check)
	}
	if plan.total == 0 {
		return printRedrive(g, redriveOutput{Queue: q.Name, DLQ: q.DLQName, Drained: true}, 0)
	}

	bar := newProgress(g.Stderr, fmt.Sprintf("%s → %s", q.DLQName, q.Name), plan.total)
	started := time.Now()
	res, runErr := plan.run(ctx, t, bar.Set)
	bar.Done()
	out := redriveOutput{Queue: q.Name, DLQ: q.DLQName, Moved: res.Moved, Drained: res.Drained, CameBack: res.CameBack, Seconds: time.Since(started).Seconds()}
	if runErr != nil {
		out.Stopped = runErr.Error()
	}
	if err := printRedrive(g, out, time.Since(started)); err != nil {
		return err
	}
	if errors.Is(runErr, redrive.ErrInterrupted) {
		return fmt.Errorf("interrupted after moving %d messages; the rest are still in %s, none lost or doubled: run the same command to continue", res.Moved, q.DLQName)
	}
	return runErr
}

func (o dlqRedriveOptions) validate() error {
	switch {
	case o.batch < 1 || o.batch > 10:
		return usageErrorf("--batch %d must be between 1 and 10", o.batch)
	case o.max < 0:
		return usageErrorf("--max %d must not be negative", o.max)
	}
	return nil
}

// redrivePlan is a redrive checked and about to start.
type redrivePlan struct {
	queue queues.Queue
	depth queues.Depth
	// total is how many messages will move at most: the DLQ's depth now,
	// or --max when smaller.
	total int
	opts  redrive.Options
}

// planRedrive checks a redrive of o.queue's dead letters and reads the
// DLQ's depth: the one way clubctl dlq redrive and the console's redrive
// start. Unless o.force, opts.Check refuses while the queue is late.
func (g *Globals) planRedrive(ctx context.Context, t *target, o dlqRedriveOptions, rate float64, peek bool) (*redrivePlan, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	q, err := t.findQueue(o.queue)
	if err != nil {
		return nil, err
	}
	if q.DLQURL == "" {
		return nil, fmt.Errorf("%s has no dead-letter queue", q.Name)
	}
	var check func(ctx context.Context) error
	if !o.force {
		check = g.ageGuard(t, q, peek)
	}
	depth, err := queues.GetDepth(ctx, t.sqs, q.DLQURL)
	if err != nil {
		return nil, err
	}
	total := int(depth.Total())
	if o.max > 0 {
		total = min(total, o.max)
	}
	return &redrivePlan{queue: q, depth: depth, total: total,
		opts: redrive.Options{Batch: o.batch, Rate: rate, Max: o.max, Check: check}}, nil
}

// run moves the messages, reporting each count moved so far to progress.
func (p *redrivePlan) run(ctx context.Context, t *target, progress func(int)) (redrive.Result, error) {
	opts := p.opts
	opts.Progress = progress
	return redrive.Run(ctx, t.sqs, p.queue.DLQURL, p.queue.URL, opts)
}

func printRedrive(g *Globals, out redriveOutput, took time.Duration) error {
	if g.JSON {
		return g.PrintJSON(out)
	}
	msg := fmt.Sprintf("moved %d messages from %s to %s in %s", out.Moved, out.DLQ, out.Queue, took.Round(100*time.Millisecond))
	switch {
	case out.CameBack > 0:
		msg += fmt.Sprintf("; %d of them failed again and are back in the DLQ (not moved twice): see 'clubctl dlq show --queue %s'", out.CameBack, out.Queue)
	case out.Drained:
		msg += "; the DLQ is empty"
	}
	if _, err := fmt.Fprintln(g.Stdout, msg); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

func redriveDryRun(ctx context.Context, g *Globals, t *target, q queues.Queue, o dlqRedriveOptions, rate float64, depth queues.Depth, check func(context.Context) error) error {
	limit := dryRunLimit
	if o.max > 0 {
		limit = o.max
	}
	p, err := queues.Peek(ctx, t.sqs, q.DLQURL, queues.PeekOptions{Limit: limit})
	if err != nil {
		return err
	}
	would := int(depth.Total())
	if o.max > 0 {
		would = min(would, o.max)
	}
	out := redriveDryRunOutput{
		Queue: q.Name, DLQ: q.DLQName, DLQDepth: depth.Total(), WouldMove: would,
		Messages: toDeadLetters(p.Messages, g.Now()), RatePerSec: rate,
	}
	var refused error
	if check != nil {
		refused = check(ctx)
		var r *RefusedError
		if errors.As(refused, &r) {
			out.Refused = r.Reason
		} else if refused != nil {
			return refused
		}
	}
	if g.JSON {
		if err := g.PrintJSON(out); err != nil {
			return err
		}
		return refused
	}
	if err := printDeadLetters(g.Stdout, q.DLQName, out.Messages, false); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	eta := "no rate limit"
	if rate > 0 {
		eta = fmt.Sprintf("about %s at %g/s", roundDuration(time.Duration(float64(would)/rate*float64(time.Second))), rate)
	}
	summary := fmt.Sprintf("dry run: would move %d of %d messages from %s to %s, %s", would, depth.Total(), q.DLQName, q.Name, eta)
	if len(out.Messages) < would {
		summary += fmt.Sprintf(" (%d listed)", len(out.Messages))
	}
	if _, err := fmt.Fprintln(g.Stdout, summary); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return refused
}
