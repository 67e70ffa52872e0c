package api_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/apicontract"
)

// contract is api/openapi.yaml, loaded once for every test of the package.
var contract = sync.OnceValues(apicontract.Load)

func loadContract(t testing.TB) *apicontract.Contract {
	t.Helper()
	c, err := contract()
	require.NoError(t, err, "api/openapi.yaml must parse and validate as OpenAPI 3.1")
	return c
}

// TestEveryRouteIsInTheContract: the router and the document name the same
// operations, so that a route added to the handler without its contract
// (or a contract left behind by a removed route) fails here.
func TestEveryRouteIsInTheContract(t *testing.T) {
	routes := setup(t).h.Routes()
	documented := loadContract(t).Operations()
	for _, r := range routes {
		require.Contains(t, documented, r, "route %s is missing from api/openapi.yaml", r)
	}
	for _, op := range documented {
		require.Contains(t, routes, op, "api/openapi.yaml describes %s, which the router does not serve", op)
	}
	require.Len(t, documented, len(routes))
}

// TestEveryErrorCodeIsInTheContract: the Code constants of errors.go and
// the document's ErrorCode enum are the same set.
func TestEveryErrorCodeIsInTheContract(t *testing.T) {
	file, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	require.NoError(t, err)
	var codes []string
	ast.Inspect(file, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || !strings.HasPrefix(vs.Names[0].Name, "Code") || len(vs.Values) != 1 {
			return true
		}
		if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			code, err := strconv.Unquote(lit.Value)
			require.NoError(t, err)
			codes = append(codes, code)
		}
		return true
	})
	require.NotEmpty(t, codes)
	documented := loadContract(t).ErrorCodes()
	slices.Sort(codes)
	slices.Sort(documented)
	require.Equal(t, codes, documented, "the Code constants of errors.go and api/openapi.yaml's ErrorCode enum differ")
}

// checkContract fails t when the handler's answer to ev is not one
// api/openapi.yaml allows. Every answer the package's tests see through
// fixture.handle, and every answer of FuzzAPI, passes through it.
func checkContract(t testing.TB, ev events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	path, err := url.PathUnescape(ev.RawPath)
	if err != nil {
		path = ev.RawPath
	}
	req := &http.Request{
		Method: ev.RequestContext.HTTP.Method,
		URL:    &url.URL{Path: path, RawPath: ev.RawPath, RawQuery: ev.RawQueryString},
		Header: http.Header{},
	}
	header := http.Header{}
	for k, v := range resp.Headers {
		header.Set(k, v)
	}
	err = loadContract(t).Check(context.Background(), req, resp.StatusCode, header, []byte(resp.Body))
	require.NoError(t, err)
}
