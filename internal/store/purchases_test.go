package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club/purchase/purchasetest"
	"github.com/clubdev/club/internal/store"
)

// The purchase ports' contract, on DynamoDB (kumo in process).
func TestPurchaseContract(t *testing.T) {
	t.Parallel()
	purchasetest.RunStore(t, func(t *testing.T) purchasetest.Ports {
		cfg := newTables(t, store.Config{})
		s, err := store.New(client, cfg)
		require.NoError(t, err)
		pa, err := store.NewPurchaseAdapters(client, cfg)
		require.NoError(t, err)
		return purchasetest.Ports{
			Intensives: pa.Intensives, Purchases: pa.Purchases, Idempotency: s.Idempotency, Outbox: s.Outbox,
		}
	})
}
