package operationtest_test

import (
	"testing"

	"github.com/clubdev/club/internal/club/operation/operationtest"
)

func TestMemoryContract(t *testing.T) {
	t.Parallel()
	operationtest.RunStore(t, operationtest.MemoryPorts)
}
