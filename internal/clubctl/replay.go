package clubctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/clubdev/club/internal/ops/replay"
)

type replayOptions struct {
	consumer       string
	since          string
	from           string
	rate           string
	batch          int
	max            int
	dryRun         bool
	inboxRetention string
	types          []string
	force          bool
	peek           bool
}

// Where the inbox retention comes from when --inbox-retention is not given.
const (
	inboxRetentionOutput  = "InboxRetentionDays" // the template parameter, in the stack file's outputs
	defaultInboxRetention = 7 * 24 * time.Hour   // the parameter's default in the template
)

func newReplayCommand(g *Globals) *cobra.Command {
	var o replayOptions
	cmd := &cobra.Command{
		Use:   "replay --consumer C (--since T | --from EVENT_ID) [--rate R/s] [--max N] [--dry-run]",
		Short: "Deliver stored events again, with their original event_id, to one consumer",
		Long: `replay reads a window of published events from the outbox table (which keeps them for
OUTBOX_RETENTION after publication) and sends them again to one consumer's queue,
exactly as the relay published them: the stored envelope as the body, with its
original event_id, and the type and event_id message attributes. Only the types
the consumer receives are sent (its SNS subscription's filter policy, or --type);
events still unpublished are left to the relay and the sweeper.

The window starts at --since (a time, RFC 3339, or a duration ago such as 2h) or at
the event --from (inclusive), and runs to now, oldest first; --max bounds it.

Why this is safe, and when it is not: each consumer keeps an inbox row per
event_id it has applied, and a second delivery of the same event changes nothing.
Inbox rows expire after the inbox retention (the stack's InboxRetentionDays, 7
days by default). A window reaching further back than that, less an hour of
margin, is refused (exit status 3): the consumer may have forgotten those events,
and delivering them again would repeat their effects: a second e-mail, a
cancellation counted twice.

It sends at most --rate events per second, checks the age of live traffic in the
consumer's queue before it starts and every 10 seconds (refusing, or stopping,
while the oldest message is older than its work class allows, unless --force), and
stops cleanly on Ctrl-C. When it stops early it prints the --from to continue with.

Runbook: docs/runbooks/replay.md.`,
		Example: `  # What would the last two hours be?
  clubctl replay --consumer analytics --since 2h --dry-run

  # A bounded batch first, then the rest from where it stopped
  clubctl replay --consumer analytics --since 2h --max 20 --rate 5/s
  clubctl replay --consumer analytics --from 0196c0de-... --rate 20/s

  # Roster events since a given time
  clubctl replay --consumer roster --since 2026-05-01T09:00:00Z`,
		Args:                  cobra.NoArgs,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runReplay(cmd.Context(), g, o, cmd.Flags().Changed("peek"))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.consumer, "consumer", "", "the consumer: its queue's logical id or short name, e.g. analytics (required)")
	f.StringVar(&o.since, "since", "", "start of the window: RFC 3339 time or a duration ago (2h, 30m)")
	f.StringVar(&o.from, "from", "", "start of the window: an event id (inclusive)")
	f.StringVar(&o.rate, "rate", "10/s", "most events per second, like 20/s (0: no limit)")
	f.IntVar(&o.batch, "batch", 10, "events per send, 1 to 10")
	f.IntVar(&o.max, "max", 0, "most events to send (0: the whole window)")
	f.BoolVar(&o.dryRun, "dry-run", false, "list what would be sent; send nothing")
	f.StringVar(&o.inboxRetention, "inbox-retention", "", "the consumer's inbox retention, like 7d (default: the stack's InboxRetentionDays)")
	f.StringSliceVar(&o.types, "type", nil, "event types the consumer receives (default: from its SNS subscription's filter policy)")
	f.BoolVar(&o.force, "force", false, "replay even while the consumer's queue breaches its class limit")
	f.BoolVar(&o.peek, "peek", false, "measure the queue's age from message timestamps where CloudWatch has none (each peek is a receive)")
	_ = cmd.MarkFlagRequired("consumer")
	cmd.MarkFlagsMutuallyExclusive("since", "from")
	cmd.MarkFlagsOneRequired("since", "from")
	return cmd
}

type replayOutput struct {
	Consumer     string       `json:"consumer"`
	Queue        string       `json:"queue"`
	WindowStart  time.Time    `json:"window_start"`
	InWindow     int          `json:"in_window"`
	Pending      int          `json:"pending_left_to_relay"`
	OtherTypes   int          `json:"other_types"`
	Selected     int          `json:"selected"`
	Sent         int          `json:"sent"`
	DryRun       bool         `json:"dry_run"`
	NextFrom     string       `json:"next_from,omitempty"`
	Events       []replay.Row `json:"events,omitempty"`
	RetentionDay float64      `json:"inbox_retention_days"`
}

func runReplay(ctx context.Context, g *Globals, o replayOptions, peekSet bool) error {
	rate, err := parseRate("--rate", o.rate)
	if err != nil {
		return err
	}
	switch {
	case o.batch < 1 || o.batch > 10:
		return usageErrorf("--batch %d must be between 1 and 10", o.batch)
	case o.max < 0:
		return usageErrorf("--max %d must not be negative", o.max)
	}
	window := replay.Window{FromEventID: strings.TrimSpace(o.from)}
	if o.since != "" {
		if window.Since, err = parseSince(o.since, g.Now()); err != nil {
			return err
		}
	}

	t, err := g.loadTarget(ctx)
	if err != nil {
		return err
	}
	q, err := t.findQueue(o.consumer)
	if err != nil {
		return err
	}
	table := t.stack.Tables["OutboxTable"]
	if table == "" {
		return fmt.Errorf("stack file %s has no OutboxTable: nothing to replay from", g.StackFile)
	}
	retention, err := g.inboxRetention(t, o.inboxRetention)
	if err != nil {
		return err
	}
	wanted, err := g.consumerTypes(ctx, t, q.URL, q.Name, o.types)
	if err != nil {
		return err
	}

	sel, err := replay.Select(ctx, t.dynamoDB(), table, window, wanted)
	if err != nil {
		return err
	}
	if err := replay.CheckWindow(sel.Start, g.Now(), retention); err != nil {
		return &RefusedError{Reason: err.Error()}
	}
	rows := sel.Rows
	out := replayOutput{
		Consumer: o.consumer, Queue: q.Name, WindowStart: sel.Start, InWindow: len(sel.Rows) + sel.Pending + sel.Skipped,
		Pending: sel.Pending, OtherTypes: sel.Skipped, DryRun: o.dryRun, RetentionDay: retention.Hours() / 24,
	}
	if o.max > 0 && len(rows) > o.max {
		out.NextFrom = rows[o.max].EventID
		rows = rows[:o.max]
	}
	out.Selected = len(rows)

	var check func(context.Context) error
	if !o.force {
		// The local cloud knows its ages without a receive: peek only when asked.
		peek := peekSet && o.peek
		check = g.ageGuard(t, q, peek)
	}
	if o.dryRun {
		out.Events = rows
		var refused error
		if check != nil {
			refused = check(ctx)
		}
		if err := printReplay(g, out, 0, rate); err != nil {
			return err
		}
		return refused
	}
	if len(rows) == 0 {
		return printReplay(g, out, 0, rate)
	}

	bar := newProgress(g.Stderr, "replay → "+q.Name, len(rows))
	started := time.Now()
	sent, sendErr := replay.Send(ctx, t.sqs, q.URL, rows, replay.SendOptions{Rate: rate, Batch: o.batch, Check: check, Progress: bar.Set})
	bar.Done()
	out.Sent = sent
	if sent < len(rows) {
		out.NextFrom = rows[sent].EventID
	}
	if err := printReplay(g, out, time.Since(started), rate); err != nil {
		return err
	}
	if errors.Is(sendErr, replay.ErrInterrupted) {
		return fmt.Errorf("interrupted after %d of %d events; continue with --from %s", sent, len(rows), out.NextFrom)
	}
	return sendErr
}

// parseSince reads --since: an RFC 3339 time, or a duration before now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	d, err := parseDays(s)
	if err != nil || d <= 0 {
		return time.Time{}, usageErrorf("--since %q: want an RFC 3339 time (2026-05-01T09:00:00Z) or a duration ago (2h, 3d)", s)
	}
	return now.Add(-d).UTC(), nil
}

// parseDays reads a Go duration that may also be a number of days ("7d").
func parseDays(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(strings.TrimSpace(s), "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil {
			return 0, err
		}
		return time.Duration(n * float64(24*time.Hour)), nil
	}
	return time.ParseDuration(s)
}

// inboxRetention is --inbox-retention, else the stack's InboxRetentionDays,
// else the template's default, said on stderr.
func (g *Globals) inboxRetention(t *target, flag string) (time.Duration, error) {
	if flag != "" {
		d, err := parseDays(flag)
		if err != nil || d <= 0 {
			return 0, usageErrorf("--inbox-retention %q: want a positive duration like 7d or 36h", flag)
		}
		return d, nil
	}
	if v, ok := t.stack.Outputs[inboxRetentionOutput]; ok {
		days, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || days <= 0 {
			return 0, fmt.Errorf("stack output %s = %q: want a positive number of days", inboxRetentionOutput, v)
		}
		return time.Duration(days * float64(24*time.Hour)), nil
	}
	fmt.Fprintf(g.Stderr, "note: the stack file has no %s; assuming the template's default of 7 days (pass --inbox-retention if the stack differs)\n", inboxRetentionOutput)
	return defaultInboxRetention, nil
}

// consumerTypes says which event types the consumer of the queue receives:
// the given types, or its subscription's filter policy.
func (g *Globals) consumerTypes(ctx context.Context, t *target, queueURL, queueName string, given []string) (func(string) bool, error) {
	if len(given) > 0 {
		return func(typ string) bool { return slices.Contains(given, typ) }, nil
	}
	attrs, err := t.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return nil, fmt.Errorf("get the ARN of %s: %w", queueName, err)
	}
	topics := slices.Sorted(maps.Values(t.stack.Topics))
	sub, err := replay.FindSubscription(ctx, sns.NewFromConfig(t.aws), topics, attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)])
	if errors.Is(err, replay.ErrNoSubscription) {
		return nil, fmt.Errorf("no topic of the stack feeds %s: pass --type with the event types its consumer receives", queueName)
	}
	if err != nil {
		return nil, err
	}
	if !sub.Raw {
		return nil, fmt.Errorf("%s receives SNS envelopes (RawMessageDelivery is off) and replay sends raw events: its consumer would not read them", queueName)
	}
	return replay.TypeFilter(sub.FilterPolicy)
}

func printReplay(g *Globals, out replayOutput, took time.Duration, rate float64) error {
	if g.JSON {
		if out.Events == nil && out.DryRun {
			out.Events = []replay.Row{}
		}
		return g.PrintJSON(out)
	}
	var b strings.Builder
	if out.DryRun {
		writeReplayRows(&b, out.Events)
		eta := ""
		if rate > 0 {
			eta = fmt.Sprintf(", about %s at %g/s", roundDuration(time.Duration(float64(out.Selected)/rate*float64(time.Second))), rate)
		}
		fmt.Fprintf(&b, "dry run: would replay %d events to %s%s\n", out.Selected, out.Queue, eta)
	} else {
		fmt.Fprintf(&b, "replayed %d events to %s in %s\n", out.Sent, out.Queue, took.Round(100*time.Millisecond))
	}
	fmt.Fprintf(&b, "window from %s: %d events, %d still unpublished (left to the relay), %d of types %s does not receive\n",
		out.WindowStart.Format(time.RFC3339), out.InWindow, out.Pending, out.OtherTypes, out.Queue)
	if out.NextFrom != "" {
		fmt.Fprintf(&b, "next: --from %s\n", out.NextFrom)
	}
	if _, err := io.WriteString(g.Stdout, b.String()); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

func writeReplayRows(w io.Writer, rows []replay.Row) {
	if len(rows) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "EVENT ID\tTYPE\tCREATED AT")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.EventID, r.Type, r.CreatedAt.Format(time.RFC3339Nano))
	}
	_ = tw.Flush() // writes to a strings.Builder
}
