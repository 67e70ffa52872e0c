package status_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/ops/opstest"
	"github.com/clubdev/club/internal/ops/status"
	"github.com/clubdev/club/internal/store"
)

// Purchases written by the store in three statuses are counted by status;
// nothing else in the table (the fixture's class, enrollments) is.
func TestPurchaseScanCountsByStatus(t *testing.T) {
	t.Parallel()
	db := dynamodb.NewFromConfig(opstest.AWSConfig(opstest.Endpoint(t, nil)))
	f := opstest.NewFixture(t, db)
	f.Enroll(t, "s-0", time.Now())
	ctx := context.Background()
	now := time.Now().UTC()

	adapters, err := store.NewPurchaseAdapters(db, f.Config)
	require.NoError(t, err)
	in, err := purchase.NewIntensive(events.NewID(), "teacher-1", "Sagas", 10, purchase.Price{AmountCents: 5000, Currency: "EUR"}, 900, now)
	require.NoError(t, err)
	require.NoError(t, adapters.Intensives.Create(ctx, in))
	buy := func(student string, change func(*purchase.Purchase) error) {
		p, err := purchase.New(events.NewID(), in, student, now)
		require.NoError(t, err)
		env, err := events.New(events.NewID(), now, events.PurchaseRequested{
			PurchaseID: p.ID(), IntensiveID: in.ID(), StudentID: student, AmountCents: 5000, Currency: "EUR", HoldExpiresAt: now.Add(15 * time.Minute),
		})
		require.NoError(t, err)
		require.NoError(t, adapters.Purchases.Create(ctx, purchase.Creation{
			Purchase: p, Event: env,
			Idempotency: idempotency.Record{Caller: student, Key: "key-" + p.ID(), Fingerprint: "fp", ResourceID: p.ID(), CreatedAt: now,
				Response: idempotency.Response{Status: 202, Body: []byte(`{}`)}},
		}))
		if change != nil {
			_, err := adapters.Purchases.Update(ctx, p.ID(), change)
			require.NoError(t, err)
		}
	}
	buy("s-1", nil)
	buy("s-2", nil)
	buy("s-3", func(p *purchase.Purchase) error { return p.NeedReconciliation("provider never answered", now) })

	counts, err := status.PurchaseScan{DB: db, Table: f.Config.ClubTable}.CountByStatus(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"reserved": 2, "needs_reconciliation": 1}, counts)
}
