package apicontract_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/localcloud/template"
)

// TestTheTemplateDeploysTheDocumentsRoutes: infra/template.yaml gives API
// Gateway exactly the document's operations (besides the $default route,
// which the document describes as the answers to unknown routes), and the
// routes it opens without the JWT authorizer are the ones the document
// says need no token.
func TestTheTemplateDeploysTheDocumentsRoutes(t *testing.T) {
	st, err := template.Load(filepath.Join("..", "..", "infra", "template.yaml"), template.Options{})
	require.NoError(t, err)
	var routes, open []string
	for _, f := range st.Functions {
		for _, e := range f.HTTPAPIEvents {
			if e.Path == "$default" {
				continue
			}
			r := e.Method + " " + e.Path
			routes = append(routes, r)
			if e.Authorizer == "" {
				open = append(open, r)
			}
		}
	}
	slices.Sort(routes)
	slices.Sort(open)
	c := load(t)
	require.Equal(t, c.Operations(), routes, "the template's HttpApi events and api/openapi.yaml's operations")
	require.Equal(t, c.Open(), open, "the routes without the authorizer and the operations without security")
	require.Equal(t, []string{"GET /healthz", "POST /webhooks/payments"}, open)
}
