package front

import (
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"
)

// frontOnKumo serves a front before a kumo server for the test and returns
// its URL and counter.
func frontOnKumo(t *testing.T, opts ...Option) (string, *Counter) {
	t.Helper()
	k := kumo.NewServer()
	t.Cleanup(k.Close)
	counter := NewCounter()
	f, err := New(k.URL, Routes{}, counter, opts...)
	require.NoError(t, err)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL, counter
}

// sdkConfig is an SDK configuration for the front at url.
func sdkConfig(url, accessKey, secret string) aws.Config {
	return aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider(accessKey, secret, "")}
}

var nameSeq atomic.Int64

// uniqueName keeps resources of repeated runs apart: kumo's services are
// process-wide singletons.
func uniqueName(prefix string) string { return fmt.Sprintf("%s-%d", prefix, nameSeq.Add(1)) }
