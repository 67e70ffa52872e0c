package reference

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The embedded files are the ones SHA256SUMS names, as npm serves them at
// the pinned version (make docs-assets checks that side).
func TestVendoredFilesMatchTheirChecksums(t *testing.T) {
	sums, err := os.ReadFile("swaggerui/SHA256SUMS")
	require.NoError(t, err)
	embedded := map[string][]byte{"swagger-ui-bundle.js": swaggerBundle, "swagger-ui.css": swaggerCSS}
	sc := bufio.NewScanner(bytes.NewReader(sums))
	seen := 0
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		require.True(t, ok, "line %q", sc.Text())
		got := sha256.Sum256(embedded[name])
		require.Equal(t, sum, hex.EncodeToString(got[:]), name)
		seen++
	}
	require.Equal(t, len(embedded), seen)
}

func TestPageCarriesTheDocumentAndServesWithoutTheNetwork(t *testing.T) {
	page, err := Page()
	require.NoError(t, err)
	require.Contains(t, string(page), "<title>Club backend HTTP API: reference</title>")
	// The document's routes, as JSON inside the page.
	require.Contains(t, string(page), `"/classes/{class_id}/enrollments":`)

	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/docs", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, page, rec.Body.Bytes())
	require.Contains(t, rec.Header().Get("Content-Security-Policy"), "default-src 'none'")

	rec = httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/docs", nil))
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	require.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))
	require.JSONEq(t, `{"error":{"code":"method_not_allowed","message":"the reference page answers GET and HEAD"}}`, rec.Body.String())
}
