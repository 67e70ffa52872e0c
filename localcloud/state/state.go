package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Version is the format version this code writes and reads. A directory of
// an older version would be migrated here; there is none yet.
const Version = 1

// formatName marks a FORMAT file as ours.
const formatName = "club-local-state"

// FormatFile is the name of the version file at the top of the directory.
const FormatFile = "FORMAT"

// Fix is what every error of Open tells the developer to do.
const Fix = "start empty with `make reset` (or `club-local --fresh`), which deletes it"

type format struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
}

// Dir is an opened state directory.
type Dir struct {
	// Path is the directory.
	Path string
	// Restored is true when the directory held state from an earlier run.
	Restored bool
	// Unclean is true when the last local cloud on the directory did not
	// stop (kill -9, a crash): it left its RunningFile behind.
	Unclean bool
}

// RunningFile is there while a local cloud runs on the directory, holding
// its process id (MarkRunning, MarkStopped).
const RunningFile = "RUNNING"

// MarkRunning records that this process runs on the directory.
func (d *Dir) MarkRunning() error {
	return WriteFile(d.File(RunningFile), []byte(strconv.Itoa(os.Getpid())+"\n"))
}

// MarkStopped records a clean stop.
func (d *Dir) MarkStopped() error {
	err := os.Remove(d.File(RunningFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Kumo is the emulator's data directory (KUMO_DATA_DIR).
func (d *Dir) Kumo() string { return filepath.Join(d.Path, "kumo") }

// Streams is the directory of the stream journals.
func (d *Dir) Streams() string { return filepath.Join(d.Path, "streams") }

// File is the path of a top-level file of the directory.
func (d *Dir) File(name string) string { return filepath.Join(d.Path, name) }

// Open prepares path as a state directory: with fresh it empties it first;
// an empty or missing directory is created with a FORMAT file; an existing
// one must carry a FORMAT this code reads, and every snapshot in kumo/ must
// parse (the emulator would drop an unreadable snapshot without a word).
func Open(path string, fresh bool) (*Dir, error) {
	if path == "" {
		return nil, errors.New("state directory: no path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("state directory %s: %w", path, err)
	}
	d := &Dir{Path: abs}
	if raw, err := os.ReadFile(d.File(RunningFile)); err == nil {
		pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
		if pid > 0 && pid != os.Getpid() && alive(pid) {
			return nil, fmt.Errorf("state directory %s: another local cloud runs on it (process %d); stop it first, "+
				"or give this one its own --state-dir (if no local cloud runs on it, delete %s)", abs, pid, d.File(RunningFile))
		}
		d.Unclean = !fresh
	}
	if fresh {
		if err := os.RemoveAll(abs); err != nil {
			return nil, fmt.Errorf("state directory %s: cannot empty it for --fresh: %w", abs, err)
		}
	}
	entries, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0):
		if err := os.MkdirAll(abs, 0o750); err != nil {
			return nil, fmt.Errorf("state directory %s: %w", abs, err)
		}
		if err := WriteJSON(d.File(FormatFile), format{Format: formatName, Version: Version}); err != nil {
			return nil, fmt.Errorf("state directory %s: %w", abs, err)
		}
		return d, nil
	case err != nil:
		return nil, d.errorf("cannot be read: %v", err)
	}
	raw, err := os.ReadFile(d.File(FormatFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, d.errorf("holds files but no %s: it is not a local cloud state directory, or an unfinished one", FormatFile)
	}
	if err != nil {
		return nil, d.errorf("its %s cannot be read: %v", FormatFile, err)
	}
	var f format
	if err := json.Unmarshal(raw, &f); err != nil || f.Format != formatName || f.Version < 1 {
		return nil, d.errorf("its %s is not a state format (%q)", FormatFile, strings.TrimSpace(string(raw)))
	}
	if f.Version > Version {
		return nil, fmt.Errorf("state directory %s was written by a newer club-local (state version %d; this one reads version %d): "+
			"run a checkout at least as new as the one that wrote it, or %s", abs, f.Version, Version, Fix)
	}
	if err := checkSnapshots(d.Kumo()); err != nil {
		return nil, d.errorf("%v", err)
	}
	d.Restored = true
	return d, nil
}

func (d *Dir) errorf(format string, args ...any) error {
	return fmt.Errorf("state directory %s %s; %s", d.Path, fmt.Sprintf(format, args...), Fix)
}

// checkSnapshots checks that every emulator snapshot is JSON.
func checkSnapshots(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".json" {
			continue
		}
		p := filepath.Join(dir, e.Name())
		raw, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("cannot read %s: %w", p, err)
		}
		if !json.Valid(raw) {
			return fmt.Errorf("holds a snapshot that does not parse: %s", p)
		}
	}
	return nil
}

// WriteJSON writes v as JSON to path through a temporary file and a rename.
func WriteJSON(path string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return WriteFile(path, raw)
}

// WriteFile writes data to path through a temporary file and a rename.
func WriteFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadJSON reads path into v. A missing file leaves v as it is and returns
// false; a file that does not parse is an error naming it and the fix.
func ReadJSON(path string, v any) (bool, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("state file %s cannot be read: %w; %s", path, err, Fix)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("state file %s does not parse: %w; %s", path, err, Fix)
	}
	return true, nil
}
