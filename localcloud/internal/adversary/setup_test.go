package adversary

import (
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/sdkhttp"
	"github.com/clubdev/club/localcloud/internal/front"
)

// env is an endpoint as the local cloud serves it: the adversary before a
// front before kumo.
type env struct {
	adv   *Adversary
	front *front.Front
	aws   aws.Config
}

// setup serves the adversary with spec (at seed 1) before a front on kumo.
func setup(t *testing.T, spec string) env {
	t.Helper()
	k := kumo.NewServer()
	t.Cleanup(k.Close)
	f, err := front.New(k.URL, front.Routes{}, front.NewCounter())
	require.NoError(t, err)
	a := New(1)
	require.NoError(t, a.Set(spec, 0))
	f.ReplayUnless(a.On)
	srv := httptest.NewServer(a.Handler(f, f.Kumo()))
	t.Cleanup(srv.Close)
	t.Logf("adversary %q, seed %d", spec, a.Seed())
	return env{adv: a, front: f, aws: aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		HTTPClient:  sdkhttp.New(),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}}
}

// count is how many times the behaviour was carried out.
func (e env) count(b Behaviour) int64 { return e.adv.Stats().Counts[b] }

var nameSeq atomic.Int64

// uniqueName keeps resources of tests apart: kumo's services are
// process-wide singletons.
func uniqueName(prefix string) string { return fmt.Sprintf("%s-%d", prefix, nameSeq.Add(1)) }
