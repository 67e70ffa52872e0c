// Package reconcile lists the purchases a person must look at — those in
// checking_payment and needs_reconciliation — with how long each has been in
// its status, what the payment provider says about its payment now, and the
// next step in words (docs/runbooks/reconciliation.md). It only reads: it
// never changes a purchase nor asks the provider for anything but a
// payment's status, so running it twice is harmless.
//
// Purchases are found by a Scan of the club table (it has no index by
// status), like the purchase counts of package status: an operator's
// occasional look, not a dashboard.
package reconcile
