package clubctl

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/clubdev/club/internal/ops/queues"
)

func newDLQCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Inspect dead-letter queues and move their messages back",
		Long: `dlq lists the dead-letter queues of the stack, shows their messages with the reason
the consumer gave (the dlq_code and dlq_reason attributes), and redrives them to the
queue they came from. Each consumer queue <X>Queue has its DLQ <X>DLQ; --queue takes
either name or the short one (notifications, analytics, roster).

Looking at a DLQ receives its messages with a visibility timeout and makes them
visible again at once: it deletes nothing, and since a DLQ has no redrive policy of
its own the receive counts it adds do no harm.

Runbook: docs/runbooks/dlq-redrive.md.`,
		Example: `  clubctl dlq list
  clubctl dlq show --queue notifications --max 5
  clubctl dlq redrive --queue notifications --max 10 --rate 5/s   # a bounded batch first
  clubctl dlq redrive --queue notifications --rate 50/s`,
		// Runnable, so that an unknown subcommand is an error, not help.
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newDLQListCommand(g), newDLQShowCommand(g), newDLQRedriveCommand(g))
	return cmd
}

// dlqPeekLimit bounds how many dead letters list looks at for ages and
// reasons.
const dlqPeekLimit = 100

type dlqSummary struct {
	Queue            string         `json:"queue"`
	DLQ              string         `json:"dlq"`
	Depth            int64          `json:"depth"`
	OldestAgeSeconds *float64       `json:"oldest_age_seconds"`
	Looked           int            `json:"looked_at"`
	Codes            map[string]int `json:"codes,omitempty"`
}

func newDLQListCommand(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "Every dead-letter queue: depth, oldest age, reasons",
		Long: `list shows each dead-letter queue with its depth, the age of its oldest message and
how many of its messages carry each dlq_code (from a look at up to 100 of them;
messages the redrive policy moved, rather than a consumer, have no code: "-").`,
		Example: `  clubctl dlq list
  clubctl dlq list --json | jq '.[] | select(.depth > 0)'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDLQList(cmd.Context(), g) },
	}
}

func runDLQList(ctx context.Context, g *Globals) error {
	t, err := g.loadTarget(ctx)
	if err != nil {
		return err
	}
	out, err := g.dlqSummaries(ctx, t)
	if err != nil {
		return err
	}
	if g.JSON {
		if out == nil {
			out = []dlqSummary{}
		}
		return g.PrintJSON(out)
	}
	tw := tabwriter.NewWriter(g.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DLQ\tSOURCE\tDEPTH\tOLDEST\tCODES")
	for _, s := range out {
		oldest := "-"
		if s.OldestAgeSeconds != nil {
			oldest = (time.Duration(*s.OldestAgeSeconds * float64(time.Second))).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", s.DLQ, s.Queue, s.Depth, oldest, formatCodes(s.Codes, s.Looked, s.Depth))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// dlqSummaries looks at every dead-letter queue of t: the source of dlq list
// and of the console's dead letters.
func (g *Globals) dlqSummaries(ctx context.Context, t *target) ([]dlqSummary, error) {
	var out []dlqSummary
	for _, q := range t.catalog.WithDLQ() {
		d, err := queues.GetDepth(ctx, t.sqs, q.DLQURL)
		if err != nil {
			return nil, err
		}
		s := dlqSummary{Queue: q.Name, DLQ: q.DLQName, Depth: d.Total(), Codes: map[string]int{}}
		if d.Total() > 0 {
			p, err := queues.Peek(ctx, t.sqs, q.DLQURL, queues.PeekOptions{Limit: dlqPeekLimit})
			if err != nil {
				return nil, err
			}
			s.Looked = len(p.Messages)
			if len(p.Messages) > 0 {
				s.OldestAgeSeconds = seconds(p.Messages[0].Age(g.Now()))
			}
			for _, m := range p.Messages {
				s.Codes[orDash(m.Attributes["dlq_code"])]++
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func formatCodes(codes map[string]int, looked int, depth int64) string {
	if len(codes) == 0 {
		return "-"
	}
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(codes)) {
		parts = append(parts, fmt.Sprintf("%s×%d", c, codes[c]))
	}
	s := strings.Join(parts, " ")
	if int64(looked) < depth {
		s += fmt.Sprintf(" (of %d looked at)", looked)
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type dlqShowOptions struct {
	queue string
	max   int
	body  bool
}

type deadLetter struct {
	MessageID    string            `json:"message_id"`
	SentAt       time.Time         `json:"sent_at"`
	AgeSeconds   float64           `json:"age_seconds"`
	ReceiveCount int               `json:"dlq_receive_count"`
	Type         string            `json:"type,omitempty"`
	EventID      string            `json:"event_id,omitempty"`
	Code         string            `json:"dlq_code,omitempty"`
	Reason       string            `json:"dlq_reason,omitempty"`
	Attributes   map[string]string `json:"attributes,omitempty"`
	Body         string            `json:"body"`
}

func toDeadLetters(msgs []queues.Message, now time.Time) []deadLetter {
	out := make([]deadLetter, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, deadLetter{
			MessageID: m.ID, SentAt: m.SentAt, AgeSeconds: m.Age(now).Seconds(), ReceiveCount: m.ReceiveCount,
			Type: m.Attributes["type"], EventID: m.Attributes["event_id"],
			Code: m.Attributes["dlq_code"], Reason: m.Attributes["dlq_reason"],
			Attributes: m.Attributes, Body: m.Body,
		})
	}
	return out
}

func newDLQShowCommand(g *Globals) *cobra.Command {
	var o dlqShowOptions
	cmd := &cobra.Command{
		Use:   "show --queue Q [--max N] [--body]",
		Short: "The messages of one dead-letter queue, oldest first, with their reasons",
		Long: `show lists the oldest messages of a queue's DLQ: when each was dead-lettered (for a
message the redrive policy moved: when it was first sent), the event's type and id,
and the consumer's dlq_code and dlq_reason. Read them before any redrive: a
malformed_event or contract_conflict will fail again however often it is redriven;
a retries_exhausted from a provider outage will not, once the provider is back.`,
		Example: `  clubctl dlq show --queue notifications
  clubctl dlq show --queue AnalyticsDLQ --max 50 --body
  clubctl dlq show --queue roster --json | jq -r '.[].dlq_code' | sort | uniq -c`,
		Args:                  cobra.NoArgs,
		DisableFlagsInUseLine: true,
		RunE:                  func(cmd *cobra.Command, _ []string) error { return runDLQShow(cmd.Context(), g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.queue, "queue", "", "the queue (or its DLQ): a logical id or short name (required)")
	f.IntVar(&o.max, "max", 20, "most messages to show")
	f.BoolVar(&o.body, "body", false, "print each message's body too")
	_ = cmd.MarkFlagRequired("queue")
	return cmd
}

func runDLQShow(ctx context.Context, g *Globals, o dlqShowOptions) error {
	if o.max <= 0 {
		return usageErrorf("--max %d must be positive", o.max)
	}
	t, err := g.loadTarget(ctx)
	if err != nil {
		return err
	}
	q, letters, err := g.deadLetters(ctx, t, o.queue, o.max)
	if err != nil {
		return err
	}
	if g.JSON {
		return g.PrintJSON(letters)
	}
	if err := printDeadLetters(g.Stdout, q.DLQName, letters, o.body); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// deadLetters looks at up to max of the oldest messages of the DLQ of the
// queue named name: the source of dlq show and of the console.
func (g *Globals) deadLetters(ctx context.Context, t *target, name string, max int) (queues.Queue, []deadLetter, error) {
	q, err := t.findQueue(name)
	if err != nil {
		return queues.Queue{}, nil, err
	}
	if q.DLQURL == "" {
		return queues.Queue{}, nil, fmt.Errorf("%s has no dead-letter queue", q.Name)
	}
	p, err := queues.Peek(ctx, t.sqs, q.DLQURL, queues.PeekOptions{Limit: max})
	if err != nil {
		return queues.Queue{}, nil, err
	}
	return q, toDeadLetters(p.Messages, g.Now()), nil
}

func printDeadLetters(w io.Writer, dlq string, letters []deadLetter, body bool) error {
	if len(letters) == 0 {
		_, err := fmt.Fprintf(w, "%s is empty\n", dlq)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MESSAGE ID\tAGE\tTYPE\tEVENT ID\tCODE\tREASON")
	for _, l := range letters {
		age := time.Duration(l.AgeSeconds * float64(time.Second)).Round(time.Second)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", l.MessageID, age, orDash(l.Type), orDash(l.EventID), orDash(l.Code), orDash(oneLine(l.Reason)))
		if body {
			fmt.Fprintf(tw, "\t\tbody: %s\t\t\t\n", oneLine(l.Body))
		}
	}
	return tw.Flush()
}

// oneLine keeps a table row on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
