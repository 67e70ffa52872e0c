package purchasetest_test

import (
	"testing"

	"github.com/clubdev/club/internal/club/purchase/purchasetest"
)

func TestMemoryContract(t *testing.T) {
	t.Parallel()
	purchasetest.RunStore(t, purchasetest.MemoryPorts)
}
