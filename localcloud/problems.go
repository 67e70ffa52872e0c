package localcloud

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// ProblemLog keeps the most recent warnings and errors written to it by a
// slog text handler, or by the functions (their JSON log lines, as the
// local cloud passes them on in Config.FunctionOutput). Test harnesses discard the local cloud's log to keep
// passing runs quiet; through a ProblemLog they can still print what went
// wrong inside the stack (a receive that failed, an invocation that timed
// out) when a test fails. Safe for concurrent use.
type ProblemLog struct {
	// Source names what wrote the lines in Dump's heading (default "local
	// cloud").
	Source  string
	mu      sync.Mutex
	max     int
	lines   [][]byte
	partial []byte
	dropped int
}

// NewProblemLog keeps at most max lines (the newest).
func NewProblemLog(max int) *ProblemLog { return &ProblemLog{max: max} }

// Write takes log output; lines at level WARN or ERROR are kept.
func (p *ProblemLog) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	data := append(p.partial, b...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		line := data[:i]
		data = data[i+1:]
		if bytes.Contains(line, []byte(" level=WARN ")) || bytes.Contains(line, []byte(" level=ERROR ")) ||
			bytes.Contains(line, []byte(`"level":"WARN"`)) || bytes.Contains(line, []byte(`"level":"ERROR"`)) {
			p.lines = append(p.lines, bytes.Clone(line))
			if len(p.lines) > p.max {
				p.lines = p.lines[1:]
				p.dropped++
			}
		}
	}
	p.partial = bytes.Clone(data)
	return len(b), nil
}

// Len is the number of lines kept.
func (p *ProblemLog) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lines)
}

// Dump writes the kept lines to w under a heading, or nothing when there
// are none.
func (p *ProblemLog) Dump(w io.Writer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.lines) == 0 {
		return
	}
	source := p.Source
	if source == "" {
		source = "local cloud"
	}
	fmt.Fprintf(w, "--- %s: the last %d warnings and errors", source, len(p.lines))
	if p.dropped > 0 {
		fmt.Fprintf(w, " (%d earlier ones not kept)", p.dropped)
	}
	fmt.Fprintln(w, " ---")
	for _, l := range p.lines {
		fmt.Fprintf(w, "%s\n", l)
	}
}
