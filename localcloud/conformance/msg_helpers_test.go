package conformance_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/engine"
	"github.com/clubdev/club/localcloud/internal/front"
	"github.com/clubdev/club/localcloud/sfn"
	sfnapi "github.com/clubdev/club/localcloud/sfn/api"
	"github.com/clubdev/club/localcloud/testkit"
)

// The messaging cases (SQS, SNS, Step Functions) follow what the local
// cloud's endpoint answers: the front before the engine. While the suite's
// endpoint is the bare engine (the front answers GET /_club/requests; an
// engine does not), msgConfig puts a front before it in this process, so
// that each case checks what `make run` serves; once the endpoint is the
// front, msgConfig is awsConfig.

var (
	frontsMu sync.Mutex
	fronts   = map[string]string{} // engine endpoint → front endpoint before it
)

// msgConfig is awsConfig pointed at the local cloud's front on the engine
// under test.
func msgConfig(t *testing.T) aws.Config {
	t.Helper()
	cfg := awsConfig(t)
	cfg.BaseEndpoint = aws.String(msgEndpoint(t))
	return cfg
}

// msgEndpoint is the URL of the front on the engine under test.
func msgEndpoint(t *testing.T) string {
	t.Helper()
	base := testkit.URL()
	frontsMu.Lock()
	defer frontsMu.Unlock()
	if u, ok := fronts[base]; ok {
		return u
	}
	resp, err := http.Get(base + "/_club/requests")
	require.NoError(t, err)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		fronts[base] = base // already the local cloud's endpoint
		return base
	}
	var opts []front.Option
	if testkit.Engine() == engine.Moto {
		opts = append(opts, front.WithMotoEngine())
	}
	// Step Functions is the local cloud's own executor on either engine.
	machines := sfnapi.NewHandler(sfn.New(sfn.Options{Resources: sfn.NewResources()}))
	f, err := front.New(base, front.Routes{StepFunctions: machines}, front.NewCounter(), opts...)
	require.NoError(t, err)
	// Lives as long as the test binary, like the engine behind it.
	srv := httptest.NewServer(f)
	fronts[base] = srv.URL
	return srv.URL
}
