package sdkhttp_test

import (
	"bytes"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/sdkhttp"
)

// A configuration loaded with a custom CA bundle (AWS_CA_BUNDLE) keeps it
// once mended: the SDK's loader adds the bundle to its own client type only,
// so a program mends after loading. The service here is served over TLS
// with a certificate only that bundle trusts.
func TestMendKeepsACustomCABundle(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{"QueueUrls":["https://queue.example/q"]}`))
	}))
	t.Cleanup(srv.Close)
	bundle := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	cfg, err := config.LoadDefaultConfig(t.Context(), config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithCustomCABundle(bytes.NewReader(bundle)))
	require.NoError(t, err)
	sdkhttp.Mend(&cfg)
	require.IsType(t, &sdkhttp.Client{}, cfg.HTTPClient)
	sdkhttp.Mend(&cfg) // twice is once
	require.IsType(t, &sdkhttp.Client{}, cfg.HTTPClient)

	out, err := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(srv.URL) }).
		ListQueues(t.Context(), &sqs.ListQueuesInput{})
	require.NoError(t, err, "the mended client trusts the bundle's certificate")
	require.Equal(t, []string{"https://queue.example/q"}, out.QueueUrls)
	require.EqualValues(t, 1, calls.Load())
}
