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
	"github.com/clubdev/club/internal/ops/status"
)

type statusOptions struct {
	sample    time.Duration
	peek      bool
	peekLimit int
	// gaugesOnly reads the queues, the outbox and the streams, and leaves
	// out what a frequent reader must not pay for each time: counting
	// purchases scans the club table. The console's charts read it.
	gaugesOnly bool
}

func newStatusCommand(g *Globals) *cobra.Command {
	var o statusOptions
	cmd := &cobra.Command{
		Use:   "status [--sample D] [--peek] [--peek-limit N]",
		Short: "Queues (depth, age, DLQ, drain), outbox, stream lag and purchases at a glance",
		Long: `status shows, for every queue of the stack: visible, in-flight and delayed messages,
the age of the oldest message, its work class's maximum age and whether it is
breached, the depth of its dead-letter queue, and the drain rate with the time to
empty. Then the outbox (unpublished rows and the age of the oldest), the lag of
every stream consumer, and purchases per status, marking with (!) those a person
must look at (checking_payment, needs_reconciliation). Counting purchases scans
the club table.

Drain: the depth is sampled twice, --sample apart; the difference is the net drain
rate (completions minus arrivals, the capacity model's "debt shrinks at R-A per
second") and the time to empty at that rate. "growing" means the queue does not
drain at all: more arrives than is completed.

Age of the oldest message: from CloudWatch's ApproximateAgeOfOldestMessage where
the endpoint serves it (AWS; the value is a minute or a few old). On the local
cloud, from its own record of the messages each queue holds (GET
<endpoint>/_club/queues/age, "(local)"), which receives nothing either; a "≥"
there means SNS delivered messages no consumer has received yet.

--peek measures it instead from the SentTimestamp of the messages themselves:
receive them with a visibility timeout, look, and make them visible again at
once. A peek never deletes or consumes a message, but every receive counts toward
the queue's maxReceiveCount: a message one failure away from the limit goes to the
DLQ at its next receive instead of being retried once more, and for the few
milliseconds of the peek the messages are hidden from consumers. It is off unless
you pass --peek. In-flight and delayed messages cannot be peeked; a peek that
stops at --peek-limit reports the age as "≥".

Stream lag: on the local cloud, the records each stream mapping has not delivered
yet (GET <endpoint>/_club/stats); on AWS, the IteratorAge metric of each function.

Alarms: the stack's alarms (those that notify its ops topic, output OpsTopicArn)
now in state ALARM, with the reason and the description, which names the runbook.
On the local cloud its own evaluator sets the states (docs/local-cloud.md).

Exit status 1 when a section could not be read (the rest is still printed).`,
		Example: `  # The local cloud
  clubctl status

  # A stack on AWS, measuring the drain over ten seconds, peeking for ages
  clubctl status --stack-file .club/prod.json --sample 10s --peek

  # For scripts: is any queue past its class limit?
  clubctl status --json | jq '.queues[] | select(.breached) | .name'`,
		Args:                  cobra.NoArgs,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStatus(cmd, g, o, cmd.Flags().Changed("peek"))
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.sample, "sample", 2*time.Second, "time between the two depth samples of the drain rate (0: no drain rate)")
	f.BoolVar(&o.peek, "peek", false, "compute ages from message timestamps where CloudWatch has none (each peek is a receive)")
	f.IntVar(&o.peekLimit, "peek-limit", 100, "most messages a peek looks at per queue")
	return cmd
}

func runStatus(cmd *cobra.Command, g *Globals, o statusOptions, peekSet bool) error {
	if o.sample < 0 {
		return usageErrorf("--sample %s must not be negative", o.sample)
	}
	if o.peekLimit <= 0 {
		return usageErrorf("--peek-limit %d must be positive", o.peekLimit)
	}
	ctx := cmd.Context()
	t, err := g.loadTarget(ctx)
	if err != nil {
		return err
	}
	// The local cloud knows its ages without a receive: peek only when asked.
	r, err := g.collectStatus(ctx, t, o, peekSet && o.peek)
	if err != nil {
		return err
	}
	if g.JSON {
		if err := g.PrintJSON(statusJSON(r, o.sample)); err != nil {
			return err
		}
	} else if err := printStatus(g.Stdout, r, o.sample); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return r.Incomplete()
}

// collectStatus reads the status report of t: the one source of clubctl
// status and of the console's work classes.
func (g *Globals) collectStatus(ctx context.Context, t *target, o statusOptions, peek bool) (*status.Report, error) {
	cw := g.clients.cloudWatch(t.aws)
	c := &status.Collector{
		SQS: t.sqs,
		Ages: &queues.AgeProber{
			SQS: t.sqs, CloudWatch: cw, Peek: peek, Local: localAges(t, peek),
			PeekOptions: queues.PeekOptions{Limit: o.peekLimit}, Now: g.Now,
		},
		OutboxTable:  t.stack.Tables["OutboxTable"],
		Alarms:       g.clients.alarms(t.aws),
		OpsTopicARN:  t.stack.Outputs["OpsTopicArn"],
		SagaDeployed: len(t.stack.StateMachines) > 0,
		Sample:       o.sample,
		Now:          g.Now,
	}
	if c.OutboxTable != "" {
		c.DynamoDB = t.dynamoDB()
	}
	if o.gaugesOnly {
		c.Alarms, c.SagaDeployed = nil, false
	}
	if club := t.stack.Tables["ClubTable"]; c.SagaDeployed && club != "" {
		c.Purchases = status.PurchaseScan{DB: t.dynamoDB(), Table: club}
	}
	if IsLocal(t.stack) {
		c.Streams = status.LocalStats{Endpoint: t.stack.Endpoint}
	} else {
		c.Streams = status.IteratorAges{CloudWatch: cw, Functions: t.stack.Functions, Now: g.Now}
	}
	return c.Collect(ctx, t.catalog)
}

// The --json form: durations in seconds, absent values null.

type statusOutput struct {
	At            time.Time       `json:"at"`
	SampleSeconds float64         `json:"sample_seconds"`
	Queues        []queueOutput   `json:"queues"`
	Outbox        *outboxOutput   `json:"outbox"`
	Streams       []streamOutput  `json:"streams"`
	Purchases     purchasesOutput `json:"purchases"`
	// Alarms are the alarms in state ALARM; null when not read.
	Alarms   []alarmOutput `json:"alarms"`
	Problems []string      `json:"problems,omitempty"`
}

type alarmOutput struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Reason      string    `json:"reason"`
	Since       time.Time `json:"since"`
}

type queueOutput struct {
	Name             string   `json:"name"`
	URL              string   `json:"url"`
	Class            string   `json:"class,omitempty"`
	MaxAgeSeconds    *float64 `json:"max_age_seconds"`
	Visible          int64    `json:"visible"`
	InFlight         int64    `json:"in_flight"`
	Delayed          int64    `json:"delayed"`
	OldestAgeSeconds *float64 `json:"oldest_age_seconds"`
	AgeSource        string   `json:"age_source"`
	AgeComplete      bool     `json:"age_complete"`
	AgeNote          string   `json:"age_note,omitempty"`
	Breached         bool     `json:"breached"`
	DLQ              string   `json:"dlq,omitempty"`
	DLQDepth         *int64   `json:"dlq_depth"`
	Drain            string   `json:"drain,omitempty"`
	DrainRate        float64  `json:"drain_rate_per_second"`
	DrainETASeconds  *float64 `json:"drain_eta_seconds"`
}

type outboxOutput struct {
	Unpublished      int      `json:"unpublished"`
	OldestAgeSeconds *float64 `json:"oldest_age_seconds"`
	OldestEventID    string   `json:"oldest_event_id,omitempty"`
}

type streamOutput struct {
	Consumer      string   `json:"consumer"`
	RecordsBehind *uint64  `json:"records_behind,omitempty"`
	AgeSeconds    *float64 `json:"iterator_age_seconds,omitempty"`
	Source        string   `json:"source"`
}

type purchasesOutput struct {
	Deployed  bool           `json:"deployed"`
	ByStatus  map[string]int `json:"by_status,omitempty"`
	Attention map[string]int `json:"attention,omitempty"`
	Note      string         `json:"note,omitempty"`
}

func seconds(d time.Duration) *float64 {
	s := d.Seconds()
	return &s
}

func statusJSON(r *status.Report, sample time.Duration) statusOutput {
	out := statusOutput{At: r.At, SampleSeconds: sample.Seconds(), Problems: r.Problems, Queues: []queueOutput{}, Streams: []streamOutput{}}
	for _, q := range r.Queues {
		qo := queueOutput{
			Name: q.Queue.Name, URL: q.Queue.URL,
			Visible: q.Depth.Visible, InFlight: q.Depth.InFlight, Delayed: q.Depth.Delayed,
			AgeSource: string(q.Age.Source), AgeComplete: q.Age.Complete, AgeNote: q.Age.Note,
			Breached: q.Breached, DLQ: q.Queue.DLQName,
			Drain: string(q.Drain.State), DrainRate: q.Drain.Rate,
		}
		if q.Queue.Class != nil {
			qo.Class, qo.MaxAgeSeconds = q.Queue.Class.Name, seconds(q.Queue.Class.MaxAge)
		}
		if q.Age.Known() {
			qo.OldestAgeSeconds = seconds(q.Age.Oldest)
		}
		if q.DLQDepth != nil {
			n := q.DLQDepth.Total()
			qo.DLQDepth = &n
		}
		if q.Drain.State == queues.DrainDraining {
			qo.DrainETASeconds = seconds(q.Drain.ETA)
		}
		out.Queues = append(out.Queues, qo)
	}
	if r.Outbox != nil {
		out.Outbox = &outboxOutput{Unpublished: r.Outbox.Unpublished, OldestEventID: r.Outbox.OldestEventID}
		if r.Outbox.Unpublished > 0 {
			out.Outbox.OldestAgeSeconds = seconds(r.Outbox.OldestAge)
		}
	}
	for _, s := range r.Streams {
		so := streamOutput{Consumer: s.Consumer, RecordsBehind: s.Records, Source: s.Source}
		if s.Age != nil {
			so.AgeSeconds = seconds(*s.Age)
		}
		out.Streams = append(out.Streams, so)
	}
	if r.AlarmsRead {
		out.Alarms = []alarmOutput{}
		for _, a := range r.Alarms {
			out.Alarms = append(out.Alarms, alarmOutput{Name: a.Name, Description: a.Description, Reason: a.Reason, Since: a.Since.UTC()})
		}
	}
	out.Purchases = purchasesOutput{Deployed: r.Purchases.Deployed, ByStatus: r.Purchases.ByStatus, Note: r.Purchases.Note}
	for _, s := range status.AttentionStatuses {
		if n := r.Purchases.ByStatus[s]; n > 0 {
			if out.Purchases.Attention == nil {
				out.Purchases.Attention = map[string]int{}
			}
			out.Purchases.Attention[s] = n
		}
	}
	return out
}

func printStatus(w io.Writer, r *status.Report, sample time.Duration) error {
	var b strings.Builder
	drainNote := "drain not measured (--sample 0)"
	if sample > 0 {
		drainNote = "drain measured over " + sample.String()
	}
	fmt.Fprintf(&b, "Queues at %s, %s\n", r.At.Format(time.RFC3339), drainNote)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tCLASS\tVISIBLE\tIN FLIGHT\tDELAYED\tOLDEST\tMAX AGE\tAGE\tDLQ\tDRAIN")
	var notes []string
	for _, q := range r.Queues {
		class, maxAge, verdict := "-", "-", "-"
		if q.Queue.Class != nil {
			class, maxAge, verdict = q.Queue.Class.Name, q.Queue.Class.MaxAge.String(), "ok"
			switch {
			case q.Breached:
				verdict = "BREACHED"
			case !q.Age.Known():
				verdict = "?"
			}
		}
		dlq := "-"
		if q.DLQDepth != nil {
			dlq = fmt.Sprint(q.DLQDepth.Total())
		}
		drain := "-"
		if q.Drain.State != "" {
			drain = q.Drain.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n",
			q.Queue.Name, class, q.Depth.Visible, q.Depth.InFlight, q.Depth.Delayed, q.Age, maxAge, verdict, dlq, drain)
		if q.Age.Note != "" {
			notes = append(notes, q.Queue.Name+": "+q.Age.Note)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	b.WriteString("\n")
	switch o := r.Outbox; {
	case o == nil:
		b.WriteString("Outbox: no outbox table in the stack file\n")
	case o.Unpublished == 0:
		b.WriteString("Outbox: 0 unpublished\n")
	default:
		fmt.Fprintf(&b, "Outbox: %d unpublished, oldest %s (event %s)\n", o.Unpublished, o.OldestAge.Round(time.Second), o.OldestEventID)
	}

	if len(r.Streams) == 0 {
		b.WriteString("Stream lag: no stream consumer reported\n")
	} else {
		b.WriteString("Stream lag:\n")
		for _, s := range r.Streams {
			switch {
			case s.Records != nil:
				fmt.Fprintf(&b, "  %s: %d records behind\n", s.Consumer, *s.Records)
			case s.Age != nil:
				fmt.Fprintf(&b, "  %s: iterator age %s\n", s.Consumer, s.Age.Round(time.Millisecond))
			}
		}
	}

	p := r.Purchases
	switch {
	case p.Note != "":
		fmt.Fprintf(&b, "Purchases: %s\n", p.Note)
	case len(p.ByStatus) == 0:
		b.WriteString("Purchases: none\n")
	default:
		var parts []string
		for _, s := range slices.Sorted(maps.Keys(p.ByStatus)) {
			part := fmt.Sprintf("%s %d", s, p.ByStatus[s])
			if slices.Contains(status.AttentionStatuses, s) {
				part += " (!)"
			}
			parts = append(parts, part)
		}
		fmt.Fprintf(&b, "Purchases: %s\n", strings.Join(parts, ", "))
	}

	switch {
	case !r.AlarmsRead:
	case len(r.Alarms) == 0:
		b.WriteString("Alarms: none in ALARM\n")
	default:
		fmt.Fprintf(&b, "Alarms in ALARM: %d\n", len(r.Alarms))
		for _, a := range r.Alarms {
			fmt.Fprintf(&b, "  %s since %s: %s\n    %s\n", a.Name, a.Since.UTC().Format(time.RFC3339), a.Reason, a.Description)
		}
	}

	for _, n := range notes {
		fmt.Fprintf(&b, "Note: %s\n", n)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "Problem: %s\n", p)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
