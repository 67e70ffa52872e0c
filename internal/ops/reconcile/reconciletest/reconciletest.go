// Package reconciletest builds, for the tests of package reconcile and of
// clubctl reconcile, a club table on kumo holding purchases in every case
// the reconciliation list distinguishes, written through the real store
// adapters, and the payment sandbox holding their payments.
package reconciletest

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/ops/opstest"
	"github.com/clubdev/club/internal/payment"
	sandboxpay "github.com/clubdev/club/internal/sandbox/payment"
	"github.com/clubdev/club/internal/store"
)

// The cases of World.IDs.
const (
	// CheckingRecent: in checking_payment for a minute, payment pending.
	CheckingRecent = "checking-recent"
	// CheckingStuck: in checking_payment for 20 minutes.
	CheckingStuck = "checking-stuck"
	// Succeeded, Failed, Pending: needs_reconciliation, and the provider
	// says so of the payment now (the row recorded only "pending").
	Succeeded = "succeeded"
	Failed    = "failed"
	Pending   = "pending"
	// NoPayment: needs_reconciliation before any payment id was recorded.
	NoPayment = "no-payment"
	// Confirmed: confirmed, which the list must not show.
	Confirmed = "confirmed"
)

// World is a stack on kumo with its payment provider.
type World struct {
	Endpoint    string
	DB          *dynamodb.Client
	Config      store.Config
	Provider    *sandboxpay.Server
	ProviderURL string
	// IDs maps each case to its purchase id.
	IDs map[string]string
	// Since maps each case to when its purchase entered its status.
	Since map[string]time.Time
}

// New seeds a fresh pair of tables and a fresh payment sandbox, as of now.
func New(t testing.TB, now time.Time) *World {
	t.Helper()
	ctx := context.Background()
	w := &World{Endpoint: opstest.Endpoint(t, nil), IDs: map[string]string{}, Since: map[string]time.Time{}}
	w.DB = dynamodb.NewFromConfig(opstest.AWSConfig(w.Endpoint))
	w.Config = opstest.CreateTables(t, w.DB)
	w.Provider = sandboxpay.New(sandboxpay.Options{})
	srv := httptest.NewServer(w.Provider)
	t.Cleanup(srv.Close)
	w.ProviderURL = srv.URL
	client, err := payment.New(payment.Config{BaseURL: srv.URL})
	require.NoError(t, err)

	adapters, err := store.NewPurchaseAdapters(w.DB, w.Config)
	require.NoError(t, err)
	start := now.Add(-time.Hour)
	in, err := purchase.NewIntensive(events.NewID(), "teacher-1", "Sagas", 20, purchase.Price{AmountCents: 5000, Currency: "EUR"}, 900, start)
	require.NoError(t, err)
	require.NoError(t, adapters.Intensives.Create(ctx, in))

	// buy creates a purchase and, unless noPayment, its payment at the
	// provider, settled to outcome ("" leaves it pending), recorded on the
	// row as pending; then applies change at entered.
	buy := func(name string, noPayment bool, outcome sandboxpay.Status, entered time.Time, change func(*purchase.Purchase) error) {
		p, err := purchase.New(events.NewID(), in, "student-"+name, start)
		require.NoError(t, err)
		env, err := events.New(events.NewID(), start, events.PurchaseRequested{
			PurchaseID: p.ID(), IntensiveID: in.ID(), StudentID: p.StudentID(), AmountCents: 5000, Currency: "EUR", HoldExpiresAt: p.HoldExpiresAt(),
		})
		require.NoError(t, err)
		require.NoError(t, adapters.Purchases.Create(ctx, purchase.Creation{
			Purchase: p, Event: env,
			Idempotency: idempotency.Record{Caller: p.StudentID(), Key: "key-" + p.ID(), Fingerprint: "fp", ResourceID: p.ID(), CreatedAt: start,
				Response: idempotency.Response{Status: 202, Body: []byte(`{}`)}},
		}))
		if !noPayment {
			pay, err := client.CreatePayment(ctx, p.PaymentKey(), payment.CreatePaymentRequest{AmountCents: 5000, Currency: "EUR", Reference: p.ID()})
			require.NoError(t, err)
			_, err = adapters.Purchases.Update(ctx, p.ID(), func(q *purchase.Purchase) error {
				return q.RecordPayment(pay.ID, pay.CheckoutURL, purchase.ProviderPending, start.Add(time.Second))
			})
			require.NoError(t, err)
			if outcome != "" {
				_, err := w.Provider.SettlePayment(pay.ID, outcome)
				require.NoError(t, err)
			}
		}
		_, err = adapters.Purchases.Update(ctx, p.ID(), change)
		require.NoError(t, err)
		w.IDs[name], w.Since[name] = p.ID(), entered
	}
	check := func(at time.Time) func(*purchase.Purchase) error {
		return func(p *purchase.Purchase) error { return p.StartChecking(at) }
	}
	giveUp := func(at time.Time) func(*purchase.Purchase) error {
		return func(p *purchase.Purchase) error {
			if p.Status() == purchase.StatusPaymentPending {
				if err := p.StartChecking(at.Add(-time.Minute)); err != nil {
					return err
				}
			}
			return p.NeedReconciliation("provider never answered", at)
		}
	}
	buy(CheckingRecent, false, "", now.Add(-time.Minute), check(now.Add(-time.Minute)))
	buy(CheckingStuck, false, "", now.Add(-20*time.Minute), check(now.Add(-20*time.Minute)))
	buy(Succeeded, false, sandboxpay.StatusSucceeded, now.Add(-30*time.Minute), giveUp(now.Add(-30*time.Minute)))
	buy(Failed, false, sandboxpay.StatusFailed, now.Add(-29*time.Minute), giveUp(now.Add(-29*time.Minute)))
	buy(Pending, false, "", now.Add(-28*time.Minute), giveUp(now.Add(-28*time.Minute)))
	buy(NoPayment, true, "", now.Add(-27*time.Minute), giveUp(now.Add(-27*time.Minute)))
	buy(Confirmed, false, sandboxpay.StatusSucceeded, now.Add(-26*time.Minute), func(p *purchase.Purchase) error {
		if err := p.ObservePayment(p.PaymentID(), purchase.ProviderSucceeded); err != nil {
			return err
		}
		return p.Confirm(now.Add(-26 * time.Minute))
	})
	return w
}
