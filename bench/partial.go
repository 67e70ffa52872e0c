package bench

import (
	"fmt"
	"strings"
	"time"
)

// A run of some benchmarks alone (`-bench RequestsPerEnrollment -args
// -club.report …`) must not wipe what the other benchmarks wrote: its
// sections and summary rows are spliced into the existing report, and the
// rest of the file — the header, which describes the full run, the other
// benchmarks' rows and sections, the kept sections (sections.go) — stays.
// Each spliced section says which run it comes from.

// part is one benchmark's share of the report: the heading its section
// starts with, the prefixes of its summary rows, and whether a report holds
// it.
type part struct {
	heading string
	rows    []string
	in      func(*Report) bool
}

var parts = []part{
	{"## 1. ", []string{"| enrollment latency"}, func(r *Report) bool { return r.Latency != nil }},
	{"## 2. ", []string{"| ≥ "}, func(r *Report) bool { return r.Throughput != nil }},
	{"## 3. ", []string{"| end-to-end p99 ≤", "| ≤ ", "| cost per million"}, func(r *Report) bool {
		return r.Requests != nil && len(r.Requests.Variants) > 0
	}},
	{"## 4. ", []string{"| backlog drain"}, func(r *Report) bool { return r.Drain != nil }},
	{"## 5. ", nil, func(r *Report) bool { return len(r.Functions) > 0 }},
	{"## 6. ", []string{"| a "}, func(r *Report) bool { return r.Outage != nil }},
	{"## CPU profiles", nil, func(r *Report) bool { return len(r.Profiles) > 0 }},
}

// Full reports whether r is a whole `make bench` run: the four benchmarks
// every run of it makes are there.
func (r *Report) Full() bool {
	return r.Latency != nil && r.Throughput != nil && r.Requests != nil && r.Drain != nil
}

// page is a report split where the splice works: the header (everything
// before the summary), the summary's rows, and the sections (each from its
// "## " heading to the next one), without the kept sections.
type page struct {
	header   string
	rows     []string
	sections []string
}

const summaryHeading = "## Summary\n"

func parsePage(doc string) page {
	if i := strings.Index(doc, "<!-- begin "); i >= 0 {
		doc = doc[:i]
	}
	var pg page
	start := strings.Index(doc, summaryHeading)
	if start < 0 {
		pg.header = doc
		return pg
	}
	pg.header = doc[:start]
	rest := doc[start+len(summaryHeading):]
	end := strings.Index(rest, "\n## ")
	summary := rest
	if end >= 0 {
		summary, rest = rest[:end+1], rest[end+1:]
	} else {
		rest = ""
	}
	for _, line := range strings.Split(summary, "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| target |") {
			pg.rows = append(pg.rows, line)
		}
	}
	for rest != "" {
		next := strings.Index(rest, "\n## ")
		if next < 0 {
			pg.sections = append(pg.sections, strings.TrimRight(rest, "\n")+"\n\n")
			break
		}
		pg.sections = append(pg.sections, strings.TrimRight(rest[:next+1], "\n")+"\n\n")
		rest = rest[next+1:]
	}
	return pg
}

func (p part) owns(row string) bool {
	for _, prefix := range p.rows {
		if strings.HasPrefix(row, prefix) {
			return true
		}
	}
	return false
}

// splice returns the existing report old with r's own rows and sections
// (from its rendering doc) in place of theirs.
func (r *Report) splice(old, doc string) string {
	was, now := parsePage(old), parsePage(doc)
	if was.header == "" {
		return doc
	}
	var b strings.Builder
	b.WriteString(was.header)
	b.WriteString(summaryHeading + "\n| target | result | |\n|---|---|---|\n")
	// The rows stay where the full run put them: a part that ran puts its new
	// rows where its first old row was (or at the end, if it had none).
	written := map[int]bool{} // index into parts
	writeRows := func(i int) {
		written[i] = true
		mark := fmt.Sprintf(" (§%s's own run)", strings.TrimSuffix(strings.TrimPrefix(parts[i].heading, "## "), ". "))
		for _, row := range now.rows {
			if parts[i].owns(row) {
				b.WriteString(markRow(row, mark) + "\n")
			}
		}
	}
	for _, row := range was.rows {
		i := ownerOf(row)
		switch {
		case i < 0 || !parts[i].in(r):
			b.WriteString(row + "\n")
		case !written[i]:
			writeRows(i)
		}
	}
	for i, p := range parts {
		if p.in(r) && !written[i] {
			writeRows(i)
		}
	}
	b.WriteString("\n")
	for _, p := range parts {
		if p.in(r) {
			for _, s := range now.sections {
				if strings.HasPrefix(s, p.heading) {
					b.WriteString(r.withProvenance(s))
				}
			}
			continue
		}
		for _, s := range was.sections {
			if strings.HasPrefix(s, p.heading) {
				b.WriteString(s)
			}
		}
	}
	for _, s := range was.sections {
		if !headedByAny(s) {
			b.WriteString(s)
		}
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// ownerOf returns the index in parts of the part that owns row, or -1.
func ownerOf(row string) int {
	for i, p := range parts {
		if p.owns(row) {
			return i
		}
	}
	return -1
}

func headedByAny(section string) bool {
	for _, p := range parts {
		if strings.HasPrefix(section, p.heading) {
			return true
		}
	}
	return false
}

// markRow adds mark to the result cell of a summary row ("| target |
// result | verdict |").
func markRow(row, mark string) string {
	if mark == "" {
		return row
	}
	body := strings.TrimSuffix(row, " |")
	i := strings.LastIndex(body, " | ")
	if i < 0 {
		return row
	}
	return body[:i] + mark + body[i:] + " |"
}

// withProvenance puts, under a section's heading, the run it comes from.
func (r *Report) withProvenance(section string) string {
	heading, body, _ := strings.Cut(section, "\n\n")
	note := "This section comes from a run of its own, not the header's"
	if !r.Started.IsZero() {
		note += fmt.Sprintf(": %s, %s", r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Finished.Sub(r.Started).Round(time.Second))
	}
	note += fmt.Sprintf(", on %s (%d cores)", r.Machine.CPU, r.Machine.Cores)
	if r.Machine.LoadBefore > 0 || r.Machine.LoadAfter > 0 {
		note += fmt.Sprintf(", load average (1 min) %.1f at start and %.1f at end", r.Machine.LoadBefore, r.Machine.LoadAfter)
	}
	if r.Command != "" {
		note += fmt.Sprintf("; `%s`", r.Command)
	}
	return heading + "\n\n" + note + ".\n\n" + body
}
