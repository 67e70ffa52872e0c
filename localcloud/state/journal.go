package state

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Journal is an append-only file of JSON lines. Each Append is one write(2)
// of whole lines, so a process killed at any moment leaves every line it
// appended before whole.
type Journal struct {
	path string
	mu   sync.Mutex
	f    *os.File
	buf  []byte
}

// OpenJournal opens (creating if needed) the journal at path and returns
// the lines it holds. A last line without its newline is the trace of a
// write cut short by a crash of the machine (not of the process): it is
// dropped and reported in torn; any other line that fails check is an error
// naming the journal and the fix.
func OpenJournal(path string, check func(line []byte) error) (j *Journal, lines [][]byte, torn bool, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, nil, false, err
	}
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, false, fmt.Errorf("journal %s cannot be read: %w; %s", path, err, Fix)
	}
	valid := len(raw)
	if i := bytes.LastIndexByte(raw, '\n'); i+1 < len(raw) {
		torn, valid = true, i+1
	}
	sc := bufio.NewScanner(bytes.NewReader(raw[:valid]))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	n := 0
	for sc.Scan() {
		n++
		line := append([]byte(nil), sc.Bytes()...)
		if check != nil {
			if err := check(line); err != nil {
				return nil, nil, false, fmt.Errorf("journal %s line %d: %w; %s", path, n, err, Fix)
			}
		}
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, false, fmt.Errorf("journal %s: %w; %s", path, err, Fix)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, false, err
	}
	if torn {
		if err := f.Truncate(int64(valid)); err != nil {
			f.Close()
			return nil, nil, false, err
		}
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, nil, false, err
	}
	return &Journal{path: path, f: f}, lines, torn, nil
}

// Append writes the lines (each without its newline) in one write.
func (j *Journal) Append(lines ...[]byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return fmt.Errorf("journal %s is closed", j.path)
	}
	j.buf = j.buf[:0]
	for _, l := range lines {
		j.buf = append(j.buf, l...)
		j.buf = append(j.buf, '\n')
	}
	_, err := j.f.Write(j.buf)
	return err
}

// Close closes the file; later appends fail.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}
