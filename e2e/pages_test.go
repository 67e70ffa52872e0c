package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/api/reference"
)

// TestAPIReferencePage: GET /docs on the HTTP API is the reference a client
// developer reads on day one: api/openapi.yaml rendered, with nothing
// fetched from another host and no console error.
func TestAPIReferencePage(t *testing.T) {
	// Parallel: a page, read in a tab of its own.
	t.Parallel()
	tb := openTab(t, stack.file.APIURL+"/docs", stack.file.APIURL)
	require.Contains(t, tb.text(".info .title"), "Club backend HTTP API", "the document's title")
	// Routes of the document, by their summaries, are on the page.
	tb.run(chromedp.WaitVisible(chromedp.CSS(".opblock-summary-description")))
	body := tb.text("body")
	for _, summary := range []string{"Take a seat in a class (student)", "Give the seat back (its student)", "Readiness of the API"} {
		require.Contains(t, body, summary)
	}
	tb.screenshot("api-reference")
}

// TestAPIReferenceFile: make docs's file is the same page, and it works
// opened from disk, without any server.
func TestAPIReferenceFile(t *testing.T) {
	// Parallel: a file, read in a tab of its own.
	t.Parallel()
	page, err := reference.Page()
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "api.html")
	require.NoError(t, os.WriteFile(file, page, 0o644))
	tb := openTab(t, "file://"+file, "file://")
	require.Contains(t, tb.text(".info .title"), "Club backend HTTP API")
	tb.run(chromedp.WaitVisible(chromedp.CSS(".opblock-summary-description")))
	require.Contains(t, tb.text("body"), "Take a seat in a class (student)")
}
