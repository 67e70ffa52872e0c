package examples

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

//go:embed *.json
var files embed.FS

// Example is one stored example.
type Example struct {
	// Name is the file name, for example "enrollment.created.v2.json".
	Name string
	// Type and Version are parsed from the file name.
	Type    string
	Version int
	// JSON is the file content: a complete envelope.
	JSON []byte
}

var fileName = regexp.MustCompile(`^([a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+)\.v([1-9][0-9]*)\.json$`)

// All returns every stored example, sorted by file name. It panics if a file
// is misnamed, which a test of this package catches first.
func All() []Example {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		panic(fmt.Sprintf("examples: read embedded files: %v", err))
	}
	out := make([]Example, 0, len(entries))
	for _, e := range entries {
		ex, err := load(e.Name())
		if err != nil {
			panic(fmt.Sprintf("examples: %v", err))
		}
		out = append(out, ex)
	}
	slices.SortFunc(out, func(a, b Example) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func load(name string) (Example, error) {
	m := fileName.FindStringSubmatch(name)
	if m == nil {
		return Example{}, fmt.Errorf("file %q is not named <type>.v<N>.json", name)
	}
	version, err := strconv.Atoi(m[2])
	if err != nil {
		return Example{}, fmt.Errorf("file %q: version: %w", name, err)
	}
	b, err := files.ReadFile(name)
	if err != nil {
		return Example{}, fmt.Errorf("read %q: %w", name, err)
	}
	return Example{Name: name, Type: m[1], Version: version, JSON: b}, nil
}
