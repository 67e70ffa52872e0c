package clubctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/user"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/cobra"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/store"
)

type resolveOptions struct {
	action string
	reason string
	by     string
	force  bool
}

func newResolveCommand(g *Globals) *cobra.Command {
	var o resolveOptions
	cmd := &cobra.Command{
		Use:   "resolve PURCHASE_ID --action confirm|release|refund --reason TEXT [--force] [--by NAME]",
		Short: "Decide a purchase in needs_reconciliation: grant access, release the seat, or refund",
		Long: `resolve applies a person's decision to a purchase the saga handed over
(needs_reconciliation), in one conditional write with its seat accounting:

  confirm  grant access: the held seat becomes a taken seat, the student's access is
           recorded (confirmed). Needs a held seat.
  release  free the held seat: no money was taken (expired).
  refund   give the money back: the held seat, if any, is freed and the purchase is
           refund_pending; a refund.requested outbox row, written in the same
           transaction, makes the relay start the refund execution, which refunds
           with the stable key refund-<id> (then refunded).

The decision is appended to the purchase's history with who decided (--by, default
the operating-system user) and why (--reason). An action the provider's recorded
answer contradicts is refused (exit status 3) unless --force: release after a
recorded successful payment, confirm without one, refund of a failed payment.
Run 'clubctl reconcile' first: it shows what the provider says now. Repeating the
same decision changes nothing. See docs/runbooks/reconciliation.md.`,
		Example: `  # The provider's dashboard shows the money arrived: grant the seat
  clubctl reconcile resolve p-4b3a2918 --action confirm --reason "paid per provider dashboard, ticket 812"

  # No payment ever reached the provider: free the seat
  clubctl reconcile resolve p-4b3a2918 --action release --reason "no payment at provider, ticket 813"`,
		Args:                  cobra.ExactArgs(1),
		DisableFlagsInUseLine: true,
		RunE:                  func(cmd *cobra.Command, args []string) error { return runResolve(cmd, g, args[0], o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.action, "action", "", "confirm, release or refund (required)")
	f.StringVar(&o.reason, "reason", "", "why, for the purchase's history (required)")
	f.StringVar(&o.by, "by", "", "who decides, for the purchase's history (default: the operating-system user)")
	f.BoolVar(&o.force, "force", false, "act even though the provider's recorded answer contradicts the action")
	return cmd
}

func runResolve(cmd *cobra.Command, g *Globals, purchaseID string, o resolveOptions) error {
	out, err := g.resolvePurchase(cmd.Context(), purchaseID, o)
	if err != nil {
		return err
	}
	if g.JSON {
		return g.PrintJSON(out)
	}
	if err := printResolve(g.Stdout, out); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// resolvePurchase applies a person's decision to a purchase, recording who
// and why in its history: the one way clubctl reconcile resolve and the
// console's resolve act.
func (g *Globals) resolvePurchase(ctx context.Context, purchaseID string, o resolveOptions) (resolveOutput, error) {
	action := purchase.Action(o.action)
	valid := false
	for _, a := range purchase.Actions() {
		valid = valid || a == action
	}
	switch {
	case !valid:
		return resolveOutput{}, usageErrorf("--action %q: must be confirm, release or refund", o.action)
	case strings.TrimSpace(o.reason) == "":
		return resolveOutput{}, usageErrorf("--reason is required: the purchase's history keeps why")
	}
	by := orOSUser(o.by)
	if strings.TrimSpace(by) == "" {
		return resolveOutput{}, usageErrorf("--by is required: no operating-system user to name")
	}
	adapters, cfg, err := g.purchaseAdapters(ctx)
	if err != nil {
		return resolveOutput{}, err
	}
	r := purchase.Resolution{Action: action, By: by, Reason: o.reason, Force: o.force}
	var raised []events.Envelope
	p, err := adapters.Purchases.Update(ctx, purchaseID, func(p *purchase.Purchase) error {
		if err := p.Resolve(r, g.Now().UTC()); err != nil {
			return err
		}
		raised = p.Events()
		return nil
	})
	switch {
	case errors.Is(err, club.ErrNotFound):
		return resolveOutput{}, &notFoundError{what: fmt.Sprintf("no purchase %s in %s", purchaseID, cfg.ClubTable)}
	case errors.Is(err, purchase.ErrNotReconcilable), errors.Is(err, purchase.ErrContradicted), errors.Is(err, purchase.ErrNoHold):
		return resolveOutput{}, &RefusedError{Reason: err.Error()}
	case errors.Is(err, purchase.ErrAlreadyHasAccess):
		return resolveOutput{}, &RefusedError{Reason: fmt.Sprintf("purchase %s: the student already has access to the intensive through another purchase: refund this one", purchaseID)}
	case err != nil:
		return resolveOutput{}, err
	}
	in, err := adapters.Intensives.Get(ctx, p.IntensiveID())
	if err != nil {
		return resolveOutput{}, err
	}
	out := resolveOutput{
		PurchaseID: p.ID(), Action: string(action), Status: string(p.Status()), By: by, Reason: o.reason, Forced: o.force,
		Seats: seatsJS{Free: in.SeatsFree(), Held: in.SeatsHeld(), Taken: in.SeatsTaken()},
	}
	for _, env := range raised {
		if rr, err := env.RefundRequested(); err == nil {
			out.RefundExecution = purchase.RefundRequestExecutionName(rr)
			out.RefundEvent = env.EventID
			out.RefundKey = p.RefundKey()
		}
	}
	return out, nil
}

// purchaseAdapters reads purchases and intensives of the stack through the
// store, as the saga's functions do.
func (g *Globals) purchaseAdapters(ctx context.Context) (*store.PurchaseAdapters, store.Config, error) {
	stack, err := g.LoadStack()
	if err != nil {
		return nil, store.Config{}, err
	}
	cfg := store.Config{ClubTable: stack.Tables["ClubTable"], OutboxTable: stack.Tables["OutboxTable"]}
	if cfg.ClubTable == "" || cfg.OutboxTable == "" {
		return nil, cfg, fmt.Errorf("stack file %s names no ClubTable or OutboxTable", g.StackFile)
	}
	awsCfg, err := g.AWSConfig(ctx, stack)
	if err != nil {
		return nil, cfg, err
	}
	adapters, err := store.NewPurchaseAdapters(dynamodb.NewFromConfig(awsCfg), cfg)
	return adapters, cfg, err
}

// orOSUser is by, or when empty the operating-system user's name: who
// decides, for the purchase's history.
func orOSUser(by string) string {
	if by == "" {
		if u, err := user.Current(); err == nil {
			return u.Username
		}
	}
	return by
}

// notFoundError says that what a command names does not exist.
type notFoundError struct{ what string }

func (e *notFoundError) Error() string { return e.what }

type seatsJS struct {
	Free  int `json:"free"`
	Held  int `json:"held"`
	Taken int `json:"taken"`
}

type resolveOutput struct {
	PurchaseID string  `json:"purchase_id"`
	Action     string  `json:"action"`
	Status     string  `json:"status"`
	By         string  `json:"by"`
	Reason     string  `json:"reason"`
	Forced     bool    `json:"forced"`
	Seats      seatsJS `json:"seats"`
	// RefundExecution and RefundEvent: for refund, the execution the relay
	// starts from the refund.requested row.
	RefundExecution string `json:"refund_execution,omitempty"`
	RefundEvent     string `json:"refund_event_id,omitempty"`
	// RefundKey: the idempotency key the refund is asked for with (a new
	// one after a refund the provider failed).
	RefundKey string `json:"refund_key,omitempty"`
}

func printResolve(w io.Writer, o resolveOutput) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Purchase %s is %s (%s by %s", o.PurchaseID, o.Status, o.Action, o.By)
	if o.Forced {
		b.WriteString(", forced")
	}
	fmt.Fprintf(&b, ": %s)\n", o.Reason)
	fmt.Fprintf(&b, "Seats of the intensive: %d free, %d held, %d taken\n", o.Seats.Free, o.Seats.Held, o.Seats.Taken)
	if o.RefundExecution != "" {
		fmt.Fprintf(&b, "The relay starts the refund execution %s from outbox event %s; it asks the provider with key %s, and the purchase becomes refunded when the provider confirms.\n",
			o.RefundExecution, o.RefundEvent, o.RefundKey)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
