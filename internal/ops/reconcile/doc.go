// Package reconcile lists the purchases a person must look at — those in
// checking_payment and needs_reconciliation (Assess), and those in
// refund_pending whose refund execution is missing or stuck (AssessRefunds)
// — with how long each has been in its status, what the payment provider
// says about its payment now, and the next step in words
// (docs/runbooks/reconciliation.md). It only reads: it never changes a
// purchase nor asks the provider or Step Functions for anything but a
// payment's or an execution's status, so running it twice is harmless. A
// person's decision is applied by purchase.Purchase.Resolve (clubctl
// reconcile resolve).
//
// Purchases are found by a Scan of the club table (it has no index by
// status), like the purchase counts of package status: an operator's
// occasional look, not a dashboard.
package reconcile
