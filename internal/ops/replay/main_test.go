package replay_test

import (
	"os"
	"testing"

	"github.com/clubdev/club/internal/localcloud/testkit"
)

// The package's tests run once on kumo and once on moto (opstest.Endpoint
// reaches the engine of the pass).
func TestMain(m *testing.M) { os.Exit(testkit.Run(m)) }
