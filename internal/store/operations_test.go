package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club/operation/operationtest"
	"github.com/clubdev/club/internal/store"
)

// The operation port's contract, on DynamoDB (kumo in process).
func TestOperationContract(t *testing.T) {
	t.Parallel()
	operationtest.RunStore(t, func(t *testing.T) operationtest.Ports {
		cfg := newTables(t, store.Config{})
		s, err := store.New(client, cfg)
		require.NoError(t, err)
		return operationtest.Ports{Operations: s.Operations, Outbox: s.Outbox}
	})
}
