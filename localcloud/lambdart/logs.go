package lambdart

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// maxLogLine is the longest line kept whole; longer ones are split.
const maxLogLine = 64 << 10

// logSink collects the output of every process of one function, plus the
// runtime's own lines about it, into <LogDir>/<function>.log and an optional
// echo writer. Lines are written whole, so output of concurrent processes
// interleaves by line, never within one. It counts the lines and their
// bytes whether or not they are kept: they are what CloudWatch Logs would
// ingest (FunctionStats.LogEvents). Safe for concurrent use.
type logSink struct {
	mu     sync.Mutex
	file   *os.File  // nil without LogDir
	echo   io.Writer // nil without LogWriter
	prefix []byte
	// onLine, if set, sees every line a process writes (not the runtime's
	// own lines), after it is written.
	onLine func(line []byte)
	closed bool
	events uint64 // lines written
	bytes  uint64 // their bytes, without the newlines
}

func openLogSink(dir, function string, echo io.Writer) (*logSink, error) {
	s := &logSink{echo: echo, prefix: []byte("[" + function + "] ")}
	if dir == "" {
		return s, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, function+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open function log: %w", err)
	}
	s.file = f
	return s, nil
}

// system writes one line of the runtime's own.
func (s *logSink) system(format string, args ...any) {
	s.writeLine(fmt.Appendf(nil, format, args...))
}

// copyFrom writes everything read from r, line by line, until EOF.
func (s *logSink) copyFrom(r io.Reader) {
	br := bufio.NewReaderSize(r, maxLogLine)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if line[len(line)-1] == '\n' {
				line = line[:len(line)-1]
			}
			s.writeLine(line)
			if s.onLine != nil {
				s.onLine(line)
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return // EOF, or the pipe was closed under us
		}
	}
}

func (s *logSink) writeLine(line []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.events++
	s.bytes += uint64(len(line))
	// Write errors are dropped on purpose: a full disk or a closed terminal
	// must not take a function down.
	if s.file != nil {
		_, _ = s.file.Write(append(append([]byte(nil), line...), '\n'))
	}
	if s.echo != nil {
		_, _ = s.echo.Write(append(append(append([]byte(nil), s.prefix...), line...), '\n'))
	}
}

// counts returns the lines written so far and their bytes.
func (s *logSink) counts() (events, bytes uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events, s.bytes
}

func (s *logSink) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.file == nil {
		return nil
	}
	return s.file.Close()
}
