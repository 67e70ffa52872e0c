package gateway_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/gateway"
)

// Config.Docs answers GET and HEAD /docs without an authorizer or a
// function; other methods on /docs, and /docs without a Docs handler, go to
// the API's routes as before.
func TestDocsPageIsServedBesideTheRoutes(t *testing.T) {
	t.Parallel()
	docs := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<h1>reference</h1>"))
	})
	f := setup(t, func(c *gateway.Config) {
		c.Docs = docs
		c.Routes = append(c.Routes, gateway.Route{Path: gateway.DefaultRouteKey, FunctionName: "api", Authorizer: "cognito"})
	})
	r := do(t, http.MethodGet, f.url+gateway.DocsPath, nil, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "<h1>reference</h1>", string(r.body))
	require.Empty(t, f.invoker.Calls(), "no function invoked")

	r = do(t, http.MethodPost, f.url+gateway.DocsPath, nil, nil)
	require.Equal(t, http.StatusUnauthorized, r.status, "the catch-all route, with its authorizer")

	plain := setup(t)
	r = do(t, http.MethodGet, plain.url+gateway.DocsPath, nil, nil)
	require.Equal(t, http.StatusNotFound, r.status, "no Docs handler: no page")
}
