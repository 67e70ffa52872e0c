package bench

import (
	"errors"
	"io/fs"
	"os"
	"regexp"
	"strings"
)

// Sections of docs/benchmarks.md that benchmarks run on their own write
// (bench/persist, for one): each is delimited by <!-- begin NAME --> and
// <!-- end NAME -->. `make bench` regenerates the rest of the file and keeps
// them (Report.Write).

var sectionRE = regexp.MustCompile(`(?s)<!-- begin ([a-z0-9-]+) -->\n.*?<!-- end ([a-z0-9-]+) -->\n`)

// keptSections returns the delimited sections of the file at path, in
// order ("" when there is none or no file).
func keptSections(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, m := range sectionRE.FindAllStringSubmatch(string(raw), -1) {
		if m[1] == m[2] {
			b.WriteString("\n" + m[0])
		}
	}
	return b.String(), nil
}

// WriteSection puts content (Markdown, ending in a newline) into the file at
// path as the section called name: in place of the section of that name if
// the file has one, else at its end.
func WriteSection(path, name, content string) error {
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	block := "<!-- begin " + name + " -->\n" + content + "<!-- end " + name + " -->\n"
	doc := string(raw)
	replaced := false
	doc = sectionRE.ReplaceAllStringFunc(doc, func(s string) string {
		m := sectionRE.FindStringSubmatch(s)
		if m[1] == name && m[2] == name {
			replaced = true
			return block
		}
		return s
	})
	if !replaced {
		if doc != "" && !strings.HasSuffix(doc, "\n\n") {
			doc = strings.TrimRight(doc, "\n") + "\n\n"
		}
		doc += block
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}
