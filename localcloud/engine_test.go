package localcloud

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"
)

// The front calls kumo's handler in this process (kumoEngine.Handler); if a
// new kumo no longer keeps its httptest.Server where the handler is read
// from, this fails instead of the front quietly proxying again.
func TestKumoHandlerIsReachable(t *testing.T) {
	t.Parallel()
	srv := kumo.NewServer()
	defer srv.Close()
	h := kumoEngine{srv}.Handler()
	require.NotNil(t, h, "kumo's handler")

	// It is kumo: it answers an SQS call as its server does.
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"QueueName":"in-process"}`))
	req.Header.Set("X-Amz-Target", "AmazonSQS.CreateQueue")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), "in-process")
}
