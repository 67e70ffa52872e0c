package localcloud

import (
	"net/http"

	"github.com/clubdev/club/internal/fault"
)

// faultControl serves the fault-injection control at /_club/faults on the
// endpoint (see package fault). Functions built with the faults tag
// (Config.BuildTags, club-local --tags faults) find it through
// AWS_ENDPOINT_URL and ask it at every fault point; in a normal build
// nothing calls it. Every local cloud has its own registry: the plan armed
// in one never reaches another.
func faultControl() http.Handler { return fault.NewRegistry() }
