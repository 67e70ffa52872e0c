package reference

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/clubdev/club/api"
)

// SwaggerUIVersion is the version of npm's swagger-ui-dist vendored in
// swaggerui/ (checksums in swaggerui/SHA256SUMS; make docs-assets).
const SwaggerUIVersion = "5.35.0"

var (
	//go:embed swaggerui/swagger-ui-bundle.js
	swaggerBundle []byte
	//go:embed swaggerui/swagger-ui.css
	swaggerCSS []byte
)

// Page returns the API reference page: HTML with the contract and Redoc
// inside. The result is computed once; callers must not modify it.
var Page = sync.OnceValues(func() ([]byte, error) { return render(api.OpenAPI) })

func render(openapi []byte) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(openapi, &doc); err != nil {
		return nil, fmt.Errorf("api/openapi.yaml: %w", err)
	}
	// encoding/json escapes <, > and & in strings, so the document cannot
	// end the script it is written into.
	spec, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("api/openapi.yaml as JSON: %w", err)
	}
	title := "Club API"
	if info, ok := doc["info"].(map[string]any); ok {
		if t, ok := info["title"].(string); ok && t != "" {
			title = t
		}
	}
	// The bundle and its style sheet are data: URLs: the page needs no
	// second request, and their text needs no escaping inside the page.
	var b bytes.Buffer
	fmt.Fprintf(&b, `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="Swagger UI %s">
<title>%s: reference</title>
<link rel="stylesheet" href="data:text/css;base64,%s">
<style>body { margin: 0; } .swagger-ui .topbar { display: none; }</style>
</head>
<body>
<div id="reference"></div>
<script src="data:text/javascript;base64,%s"></script>
<script>
const spec = %s;
// Served by an API ("Try it out" then calls that one), not opened as a file.
if (location.protocol.startsWith("http")) {
  spec.servers = [{ url: location.origin, description: "this server" }].concat(spec.servers || []);
}
window.ui = SwaggerUIBundle({
  spec: spec,
  dom_id: "#reference",
  deepLinking: true,
  docExpansion: "list",
  defaultModelsExpandDepth: 0,
  // The validator badge asks a public service: nothing leaves the page.
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
});
</script>
</body>
</html>
`, SwaggerUIVersion, html.EscapeString(title), base64.StdEncoding.EncodeToString(swaggerCSS),
		base64.StdEncoding.EncodeToString(swaggerBundle), spec)
	return b.Bytes(), nil
}

// Handler serves the page on GET and HEAD; other methods get 405
// method_not_allowed.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "the reference page answers GET and HEAD")
			return
		}
		page, err := Page()
		if err != nil {
			writeError(w, http.StatusInternalServerError, "reference_unavailable", err.Error())
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		// Everything the page needs is in it: forbid anything else.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline' data:; style-src 'unsafe-inline' data:; img-src data:; font-src data:; connect-src 'self'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(page)
	})
}

// writeError answers as the API does: {"error":{"code","message"}}, with a
// stable code.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": message}})
}
