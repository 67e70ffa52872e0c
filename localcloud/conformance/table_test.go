package conformance_test

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
)

// The conformance table in docs/local-cloud.md sits between these markers;
// -conformance.doc rewrites what is between them.
const (
	tableBegin = "<!-- conformance table: begin (make conformance writes it) -->"
	tableEnd   = "<!-- conformance table: end -->"
)

// writeDoc rewrites the table of -conformance.doc from this run's outcomes:
// a row per case, a column per engine.
func writeDoc() error {
	if *doc == "" {
		return nil
	}
	mu.Lock()
	table := renderTable(outcomes)
	mu.Unlock()
	old, err := os.ReadFile(*doc)
	if err != nil {
		return err
	}
	i, j := bytes.Index(old, []byte(tableBegin)), bytes.Index(old, []byte(tableEnd))
	if i < 0 || j < i {
		return fmt.Errorf("%s has no conformance table markers (%q … %q)", *doc, tableBegin, tableEnd)
	}
	var out bytes.Buffer
	out.Write(old[:i+len(tableBegin)])
	out.WriteString("\n")
	out.WriteString(table)
	out.Write(old[j:])
	return os.WriteFile(*doc, out.Bytes(), 0o644)
}

// renderTable renders outcomes as a Markdown table: case, kumo, moto, AWS
// documentation. An engine the run did not cover shows "not run".
func renderTable(list []outcome) string {
	type row struct {
		doc     string
		results map[string]string
	}
	rows := map[string]*row{}
	for _, o := range list {
		r := rows[o.Case]
		if r == nil {
			r = &row{doc: o.Doc, results: map[string]string{}}
			rows[o.Case] = r
		}
		switch o.Result {
		case "refused":
			// The DynamoDB refusals end with a sentence for the developer
			// who meets one (AWS would accept the request …): the column's
			// heading says as much.
			reason, _, _ := strings.Cut(o.Reason, " (AWS would accept")
			r.results[o.Engine] = "refused by design: " + cell(reason)
		case "fail":
			r.results[o.Engine] = "**FAIL**"
		default:
			r.results[o.Engine] = "pass"
		}
	}
	names := make([]string, 0, len(rows))
	for n := range rows {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("| Case | kumo | moto | AWS documentation |\n|---|---|---|---|\n")
	for _, n := range names {
		r := rows[n]
		res := func(e string) string {
			if v, ok := r.results[e]; ok {
				return v
			}
			return "not run"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | [%s](%s) |\n", n, res("kumo"), res("moto"), path.Base(strings.TrimSuffix(r.doc, ".html")), r.doc)
	}
	return b.String()
}

// cell makes text fit in a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}
