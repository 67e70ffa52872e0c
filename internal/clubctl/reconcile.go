package clubctl

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/spf13/cobra"

	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/ops/reconcile"
	"github.com/clubdev/club/internal/payment"
)

type reconcileOptions struct {
	status          string
	olderThan       time.Duration
	providerTimeout time.Duration
}

func newReconcileCommand(g *Globals) *cobra.Command {
	var o reconcileOptions
	cmd := &cobra.Command{
		Use:   "reconcile [--status checking_payment|needs_reconciliation|refund_pending] [--older-than D]",
		Short: "Purchases a person must look at, what the provider says, and the next step",
		Long: `reconcile lists the purchases in checking_payment and needs_reconciliation, and
those in refund_pending whose refund execution is missing or stuck or whose refund failed, oldest first: purchase, intensive, student, status, how long it has been in that status
(from the purchase's history), its payment id, what the payment provider says of
that payment now (GET /v1/payments/{id} at the stack file's payment_url), and the
next step in words:

  checking_payment      the saga polls the provider; next check by <time>
                        (or "stuck: no execution polling" once older than the
                        saga's backoff limit)
  needs_reconciliation  provider says succeeded: payment taken: grant access or
                        refund with key refund-<id>-1 (after a refund the
                        provider failed: refund again with the next key,
                        refund-<id>-<n+1>)
                        failed or pending: release the hold: no money moved
                        unknown: ask the provider with key pay-<id>
                        then decide with 'clubctl reconcile resolve'
  refund_pending        only when no execution refunds it: "missing" (no
                        <id>-refund execution five minutes after the intent: the
                        relay and the sweeper start it from the outbox) or
                        "stuck" (it ended, or ran past the saga's refund bounds);
                        or when the provider failed the refund (the execution
                        hands it over at its next check: then refund again)

A provider that does not answer (or a stack file without payment_url) is shown as
"provider unreachable"; the listing never fails for it. reconcile only reads: it
changes no purchase and asks the provider nothing else; the refund executions are
looked up in Step Functions (the stack's PurchaseStateMachineArn output). Finding the
purchases scans the club table. See docs/runbooks/reconciliation.md.`,
		Example: `  # Everything that needs a look on the local cloud
  clubctl reconcile

  # Only the purchases the saga handed over, for an hour or more
  clubctl reconcile --status needs_reconciliation --older-than 1h

  # For scripts: the ids of payments taken that need a decision
  clubctl reconcile --json | jq -r '.purchases[] | select(.provider_status == "succeeded") | .purchase_id'`,
		Args:                  cobra.NoArgs,
		DisableFlagsInUseLine: true,
		RunE:                  func(cmd *cobra.Command, _ []string) error { return runReconcile(cmd, g, o) },
	}
	cmd.AddCommand(newResolveCommand(g))
	f := cmd.Flags()
	f.StringVar(&o.status, "status", "", "only purchases in this status (checking_payment, needs_reconciliation or refund_pending)")
	f.DurationVar(&o.olderThan, "older-than", 0, "only purchases in their status for at least this long")
	f.DurationVar(&o.providerTimeout, "provider-timeout", 5*time.Second, "how long to wait for the provider's answer on each payment")
	return cmd
}

func runReconcile(cmd *cobra.Command, g *Globals, o reconcileOptions) error {
	statuses := reconcile.Statuses
	if o.status != "" {
		s := purchase.Status(o.status)
		if !slices.Contains(reconcile.Statuses, s) {
			return usageErrorf("--status %q: must be checking_payment, needs_reconciliation or refund_pending", o.status)
		}
		statuses = []purchase.Status{s}
	}
	if o.olderThan < 0 {
		return usageErrorf("--older-than %s must not be negative", o.olderThan)
	}
	if o.providerTimeout <= 0 {
		return usageErrorf("--provider-timeout %s must be positive", o.providerTimeout)
	}
	now, items, err := g.reconcileItems(cmd.Context(), statuses, o.olderThan, o.providerTimeout)
	if err != nil {
		return err
	}
	if g.JSON {
		return g.PrintJSON(reconcileJSON(now, items))
	}
	if err := printReconcile(g.Stdout, now, items); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// reconcileItems finds the purchases in statuses that a person must look
// at, with what the provider says now: the source of clubctl reconcile and of
// the console's purchases.
func (g *Globals) reconcileItems(ctx context.Context, statuses []purchase.Status, olderThan, providerTimeout time.Duration) (time.Time, []reconcile.Item, error) {
	stack, err := g.LoadStack()
	if err != nil {
		return time.Time{}, nil, err
	}
	table := stack.Tables["ClubTable"]
	if table == "" {
		return time.Time{}, nil, fmt.Errorf("stack file %s names no ClubTable", g.StackFile)
	}
	cfg, err := g.AWSConfig(ctx, stack)
	if err != nil {
		return time.Time{}, nil, err
	}
	rows, err := reconcile.Scan(ctx, dynamodb.NewFromConfig(cfg), table, statuses)
	if err != nil {
		return time.Time{}, nil, err
	}
	var provider reconcile.Provider // nil: unreachable
	if stack.PaymentURL != "" {
		if c, err := payment.New(payment.Config{BaseURL: stack.PaymentURL, Timeout: providerTimeout}); err == nil {
			provider = c
		}
	}
	var executions reconcile.Executions // nil: Step Functions not reachable
	if arn := stack.Outputs["PurchaseStateMachineArn"]; arn != "" {
		executions = sfnExecutions{client: sfn.NewFromConfig(cfg), machine: arn}
	}
	now := g.Now()
	assessed := append(reconcile.Assess(ctx, rows, provider, now), reconcile.AssessRefunds(ctx, rows, executions, now)...)
	slices.SortStableFunc(assessed, func(a, b reconcile.Item) int {
		return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.PurchaseID, b.PurchaseID))
	})
	var items []reconcile.Item
	for _, it := range assessed {
		if it.Age >= olderThan {
			items = append(items, it)
		}
	}
	return now, items, nil
}

// The --json form: durations in seconds, absent times null.

type reconcileOutput struct {
	At        time.Time             `json:"at"`
	Purchases []reconcilePurchaseJS `json:"purchases"`
}

type reconcilePurchaseJS struct {
	PurchaseID            string     `json:"purchase_id"`
	IntensiveID           string     `json:"intensive_id"`
	StudentID             string     `json:"student_id"`
	Status                string     `json:"status"`
	Since                 time.Time  `json:"since"`
	AgeSeconds            float64    `json:"age_seconds"`
	PaymentID             string     `json:"payment_id,omitempty"`
	ProviderStatus        string     `json:"provider_status"`
	RecordedPaymentStatus string     `json:"recorded_payment_status,omitempty"`
	NextCheckBy           *time.Time `json:"next_check_by"`
	Stuck                 bool       `json:"stuck"`
	NextStep              string     `json:"next_step"`
	Note                  string     `json:"note,omitempty"`
}

func reconcileJSON(now time.Time, items []reconcile.Item) reconcileOutput {
	out := reconcileOutput{At: now, Purchases: []reconcilePurchaseJS{}}
	for _, it := range items {
		p := reconcilePurchaseJS{
			PurchaseID: it.PurchaseID, IntensiveID: it.IntensiveID, StudentID: it.StudentID,
			Status: string(it.Status), Since: it.Since, AgeSeconds: it.Age.Seconds(),
			PaymentID: it.PaymentID, ProviderStatus: it.Provider, RecordedPaymentStatus: string(it.RecordedPaymentStatus),
			Stuck: it.Stuck, NextStep: it.NextStep, Note: it.Note,
		}
		if !it.NextCheckBy.IsZero() {
			by := it.NextCheckBy
			p.NextCheckBy = &by
		}
		out.Purchases = append(out.Purchases, p)
	}
	return out
}

func printReconcile(w io.Writer, now time.Time, items []reconcile.Item) error {
	var b strings.Builder
	if len(items) == 0 {
		fmt.Fprintf(&b, "No purchase to reconcile at %s\n", now.UTC().Format(time.RFC3339))
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "Purchases to look at, %s\n", now.UTC().Format(time.RFC3339))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PURCHASE\tINTENSIVE\tSTUDENT\tSTATUS\tFOR\tPAYMENT\tPROVIDER\tNEXT STEP")
	for _, it := range items {
		pay := it.PaymentID
		if pay == "" {
			pay = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", it.PurchaseID, it.IntensiveID, it.StudentID,
			it.Status, it.Age.Round(time.Second), pay, it.Provider, it.NextStep)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// sfnExecutions looks executions of the purchase state machine up by name.
type sfnExecutions struct {
	client  *sfn.Client
	machine string
}

func (x sfnExecutions) Execution(ctx context.Context, name string) (string, time.Time, bool, error) {
	arn := strings.Replace(x.machine, ":stateMachine:", ":execution:", 1) + ":" + name
	out, err := x.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	var missing *sfntypes.ExecutionDoesNotExist
	switch {
	case errors.As(err, &missing):
		return "", time.Time{}, false, nil
	case err != nil:
		return "", time.Time{}, false, err
	}
	return string(out.Status), aws.ToTime(out.StartDate), true, nil
}
