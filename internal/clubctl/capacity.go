package clubctl

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/clubdev/club/internal/ops/capacity"
)

type capacityOptions struct {
	backlog  float64
	arrival  string
	rate     string
	deadline time.Duration

	simulate    bool
	workers     int
	spread      float64
	failureRate float64
	maxAttempts int
	retryDelay  time.Duration
	horizon     time.Duration
	seed        uint64
	rows        int
	plot        string
}

func newCapacityCommand(g *Globals) *cobra.Command {
	var o capacityOptions
	cmd := &cobra.Command{
		Use:   "capacity --backlog B --rate R [--arrival A] [--deadline D] [--simulate] [--plot FILE]",
		Short: "How long a backlog takes to drain, and whether a promise holds (docs/principles.md §1.8)",
		Long: `capacity is the backlog arithmetic of docs/principles.md §1.8. A backlog of B messages, served at R
per second while A more arrive per second, is a debt that shrinks at R - A per
second: it is gone after B / (R - A). With A >= R it is never gone: a queue is
intent, not capacity. Served in order, no message waits longer than B / R.

With --deadline (the promise: every waiting message done within D) it says whether
the promise holds and, if not, the rate that would keep it, A + B / D, or the
largest backlog the current rate can drain in time.

--simulate runs the same situation as discrete events with what the arithmetic
leaves out: Poisson arrivals, --workers consumers whose service times vary
(--spread, the coefficient of variation), attempts that fail (--failure-rate) and
come back after --retry-delay, up to --max-attempts (then the DLQ). It prints the
drain curve and, with --plot FILE.png, draws it beside the model's line. Retries
eat capacity: with 10% of attempts failing the 300 s of the example become ~600 s.

No stack is needed: this is arithmetic.`,
		Example: `  # 6000 e-mails, the provider takes 100/s: 60 s
  clubctl capacity --backlog 6000 --rate 100

  # ... with 80/s still arriving: 300 s; can we promise 10 s?
  clubctl capacity --backlog 6000 --arrival 80 --rate 100 --deadline 10s

  # The same, simulated with 5% failing attempts, as a picture
  clubctl capacity --backlog 6000 --arrival 80 --rate 100 --simulate --failure-rate 0.05 --plot drain.png`,
		Args:                  cobra.NoArgs,
		DisableFlagsInUseLine: true,
		RunE:                  func(cmd *cobra.Command, _ []string) error { return runCapacity(g, o, cmd.Flags().Changed) },
	}
	f := cmd.Flags()
	f.Float64Var(&o.backlog, "backlog", 0, "messages waiting now (required)")
	f.StringVar(&o.rate, "rate", "", "messages completed per second, like 100 or 100/s (required)")
	f.StringVar(&o.arrival, "arrival", "0", "messages arriving per second")
	f.DurationVar(&o.deadline, "deadline", 0, "the promise: every waiting message done within this")
	f.BoolVar(&o.simulate, "simulate", false, "also run a discrete-event simulation and print its drain curve")
	f.IntVar(&o.workers, "workers", 10, "simulation: concurrent consumers")
	f.Float64Var(&o.spread, "spread", 0.5, "simulation: coefficient of variation of a message's service time")
	f.Float64Var(&o.failureRate, "failure-rate", 0, "simulation: probability that an attempt fails and is retried")
	f.IntVar(&o.maxAttempts, "max-attempts", 5, "simulation: attempts before a message goes to the DLQ")
	f.DurationVar(&o.retryDelay, "retry-delay", 30*time.Second, "simulation: how long a failed message stays hidden")
	f.DurationVar(&o.horizon, "horizon", 0, "simulation: time simulated (default: twice the drain time, 1h if it never drains)")
	f.Uint64Var(&o.seed, "seed", 1, "simulation: random seed (the same seed gives the same run)")
	f.IntVar(&o.rows, "rows", 20, "simulation: lines of the printed drain curve")
	f.StringVar(&o.plot, "plot", "", "simulation: write the drain curve to this PNG file (implies --simulate)")
	_ = cmd.MarkFlagRequired("backlog")
	_ = cmd.MarkFlagRequired("rate")
	return cmd
}

type capacityOutput struct {
	Backlog          float64           `json:"backlog"`
	Arrival          float64           `json:"arrival_per_second"`
	Rate             float64           `json:"rate_per_second"`
	NetRate          float64           `json:"net_drain_per_second"`
	Drains           bool              `json:"drains"`
	DrainSeconds     *float64          `json:"drain_seconds"`
	WorstWaitSeconds *float64          `json:"worst_wait_seconds"`
	DeadlineSeconds  *float64          `json:"deadline_seconds,omitempty"`
	Holds            *bool             `json:"holds,omitempty"`
	RequiredRate     *float64          `json:"required_rate_per_second,omitempty"`
	MaxBacklog       *float64          `json:"max_backlog_for_deadline,omitempty"`
	Simulation       *simulationOutput `json:"simulation,omitempty"`
}

type simulationOutput struct {
	Drained        bool             `json:"drained"`
	DrainSeconds   *float64         `json:"drain_seconds"`
	MaxWaitSeconds float64          `json:"max_wait_seconds"`
	HorizonSeconds float64          `json:"horizon_seconds"`
	Arrived        int              `json:"arrived"`
	Done           int              `json:"done"`
	DeadLettered   int              `json:"dead_lettered"`
	Attempts       int              `json:"attempts"`
	Curve          []capacity.Point `json:"curve"`
	Plot           string           `json:"plot,omitempty"`
}

func runCapacity(g *Globals, o capacityOptions, changed func(string) bool) error {
	rate, err := parseRate("--rate", o.rate)
	if err != nil {
		return err
	}
	arrival, err := parseRate("--arrival", o.arrival)
	if err != nil {
		return err
	}
	m := capacity.Model{Backlog: o.backlog, Arrival: arrival, Rate: rate}
	if err := m.Validate(); err != nil {
		return &UsageError{Err: err}
	}
	if o.deadline < 0 {
		return usageErrorf("--deadline %s must not be negative", o.deadline)
	}
	if o.rows < 2 {
		return usageErrorf("--rows %d must be at least 2", o.rows)
	}
	simulate := o.simulate || o.plot != ""
	for _, name := range []string{"workers", "spread", "failure-rate", "max-attempts", "retry-delay", "horizon", "seed", "rows"} {
		if changed(name) && !simulate {
			return usageErrorf("--%s is a simulation setting: add --simulate", name)
		}
	}

	v := m.Evaluate(o.deadline)
	out := capacityOutput{Backlog: m.Backlog, Arrival: m.Arrival, Rate: m.Rate, NetRate: m.NetRate(), Drains: v.Drains}
	if v.Drains {
		out.DrainSeconds = seconds(v.DrainTime)
	}
	if w, ok := m.WorstWait(); ok {
		out.WorstWaitSeconds = seconds(w)
	}
	if o.deadline > 0 {
		out.DeadlineSeconds, out.Holds = seconds(o.deadline), &v.Holds
		out.RequiredRate, out.MaxBacklog = &v.RequiredRate, &v.MaxBacklog
	}

	var sim capacity.SimResult
	if simulate {
		sim, err = capacity.Simulation{
			Model: m, Workers: o.workers, Spread: o.spread, FailureRate: o.failureRate,
			MaxAttempts: o.maxAttempts, RetryDelay: o.retryDelay, Horizon: o.horizon, Seed: o.seed,
		}.Run()
		if err != nil {
			return &UsageError{Err: err}
		}
		so := &simulationOutput{
			Drained: sim.Drained, MaxWaitSeconds: sim.MaxWait.Seconds(), HorizonSeconds: sim.Horizon.Seconds(),
			Arrived: sim.Arrived, Done: sim.Done, DeadLettered: sim.Dead, Attempts: sim.Attempts, Curve: sim.Curve,
		}
		if sim.Drained {
			so.DrainSeconds = seconds(sim.DrainTime)
		}
		if o.plot != "" {
			if err := capacity.Plot(o.plot, m, sim); err != nil {
				return err
			}
			so.Plot = o.plot
		}
		out.Simulation = so
	}

	if g.JSON {
		return g.PrintJSON(out)
	}
	if err := printCapacity(g.Stdout, v, out.Simulation, sim, o.rows); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

func printCapacity(w io.Writer, v capacity.Verdict, so *simulationOutput, sim capacity.SimResult, rows int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Backlog %g messages, %g/s arriving, %g/s completed: ", v.Backlog, v.Arrival, v.Rate)
	switch {
	case v.Backlog == 0:
		b.WriteString("nothing to drain.\n")
	case v.Drains:
		fmt.Fprintf(&b, "the debt shrinks at %g/s.\nDrain time: %s.\n", v.NetRate(), roundDuration(v.DrainTime))
		if ww, ok := v.WorstWait(); ok {
			fmt.Fprintf(&b, "Served in order, no message waits longer than %s (backlog / rate).\n", roundDuration(ww))
		}
	default:
		fmt.Fprintf(&b, "it never drains: %g/s more arrive than are completed. A queue is intent, not capacity.\n", -v.NetRate())
	}
	if v.Deadline > 0 {
		if v.Holds {
			fmt.Fprintf(&b, "Deadline %s: the promise holds (%s to spare).\n", v.Deadline, roundDuration(v.Deadline-v.DrainTime))
		} else {
			fmt.Fprintf(&b, "Deadline %s: the promise cannot hold. Keeping it needs %s/s (%.1f× the rate)",
				v.Deadline, formatFloat(v.RequiredRate), v.RequiredRate/v.Rate)
			if v.MaxBacklog > 0 {
				fmt.Fprintf(&b, ", or a backlog of at most %s at the current rate", formatFloat(v.MaxBacklog))
			}
			b.WriteString(".\n")
		}
	}
	if so != nil {
		fmt.Fprintf(&b, "\nSimulation over %s: %d arrived, %d done, %d dead-lettered, %d attempts.\n",
			roundDuration(sim.Horizon), so.Arrived, so.Done, so.DeadLettered, so.Attempts)
		if sim.Drained {
			fmt.Fprintf(&b, "Drained after %s (model: %s); the longest wait was %s.\n", roundDuration(sim.DrainTime), modelDrain(v), roundDuration(sim.MaxWait))
		} else {
			fmt.Fprintf(&b, "Not drained within %s (model: %s); the longest wait so far was %s.\n", roundDuration(sim.Horizon), modelDrain(v), roundDuration(sim.MaxWait))
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "t\twaiting\tin flight\tretrying\tdone\tdead\toldest\t")
		for _, p := range thin(sim.Curve, rows) {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t\n", roundDuration(p.At), p.Waiting, p.InFlight, p.Retrying, p.Done, p.Dead,
				roundDuration(time.Duration(p.OldestAge*float64(time.Second))))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if so.Plot != "" {
			fmt.Fprintf(&b, "Plot: %s\n", so.Plot)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func modelDrain(v capacity.Verdict) string {
	if !v.Drains {
		return "never"
	}
	return roundDuration(v.DrainTime).String()
}

// thin picks about n evenly spaced points of the curve, first and last
// included.
func thin(curve []capacity.Point, n int) []capacity.Point {
	if len(curve) <= n {
		return curve
	}
	out := make([]capacity.Point, 0, n)
	for i := range n {
		out = append(out, curve[i*(len(curve)-1)/(n-1)])
	}
	return out
}

func roundDuration(d time.Duration) time.Duration {
	if d >= time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

func formatFloat(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", f), "0"), ".")
}
