// Command club-apidocs writes the HTTP API's reference page (package
// api/reference: api/openapi.yaml rendered by the vendored Redoc) to a file,
// the same page the local HTTP API serves on GET /docs. make docs runs it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/clubdev/club/api/reference"
)

func main() {
	out := flag.String("out", ".club/docs/api.html", "file to write the page to")
	flag.Parse()
	page, err := reference.Page()
	if err == nil {
		err = os.MkdirAll(filepath.Dir(*out), 0o755)
	}
	if err == nil {
		err = os.WriteFile(*out, page, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "club-apidocs:", err)
		os.Exit(1)
	}
	fmt.Println(*out)
}
