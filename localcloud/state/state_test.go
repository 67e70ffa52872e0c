package state

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOpenCreatesAVersionedDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	d, err := Open(dir, false)
	require.NoError(t, err)
	require.False(t, d.Restored)
	var f format
	ok, err := ReadJSON(d.File(FormatFile), &f)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, format{Format: formatName, Version: Version}, f)

	require.NoError(t, WriteJSON(filepath.Join(d.Kumo(), "dynamodb.json"), map[string]int{"tables": 1}))
	again, err := Open(dir, false)
	require.NoError(t, err)
	require.True(t, again.Restored, "a second start finds the first one's state")
	_, err = os.Stat(filepath.Join(again.Kumo(), "dynamodb.json"))
	require.NoError(t, err)
}

func TestFreshStartsEmpty(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, false)
	require.NoError(t, err)
	require.NoError(t, WriteJSON(filepath.Join(d.Kumo(), "sqs.json"), map[string]int{"queues": 3}))

	fresh, err := Open(dir, true)
	require.NoError(t, err)
	require.False(t, fresh.Restored)
	_, err = os.Stat(filepath.Join(fresh.Kumo(), "sqs.json"))
	require.True(t, errors.Is(err, os.ErrNotExist), "fresh removed the snapshot: %v", err)
	_, err = os.Stat(fresh.File(FormatFile))
	require.NoError(t, err, "and wrote a new FORMAT")

	// --fresh also gets past what would stop a start.
	require.NoError(t, os.WriteFile(fresh.File(FormatFile), []byte(`{"format":"club-local-state","version":99}`), 0o600))
	_, err = Open(dir, true)
	require.NoError(t, err)
}

func TestUnreadableOrNewerStateStopsWithTheDirectoryAndTheFix(t *testing.T) {
	cases := map[string]func(t *testing.T, dir string){
		"newer version": func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, FormatFile), []byte(`{"format":"club-local-state","version":2}`), 0o600))
		},
		"no FORMAT in a directory with files": func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600))
		},
		"FORMAT is not ours": func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, FormatFile), []byte("v1\n"), 0o600))
		},
		"a kumo snapshot cut in half": func(t *testing.T, dir string) {
			_, err := Open(dir, false)
			require.NoError(t, err)
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "kumo"), 0o750))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "kumo", "dynamodb.json"), []byte(`{"tables":{"club":`), 0o600))
		},
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			spoil(t, dir)
			_, err := Open(dir, false)
			require.Error(t, err)
			require.Contains(t, err.Error(), dir)
			require.Contains(t, err.Error(), "make reset")
			require.Contains(t, err.Error(), "--fresh")
			// Nothing was discarded.
			entries, rerr := os.ReadDir(dir)
			require.NoError(t, rerr)
			require.NotEmpty(t, entries)
		})
	}
	t.Run("newer version says so", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, FormatFile), []byte(`{"format":"club-local-state","version":7}`), 0o600))
		_, err := Open(dir, false)
		require.ErrorContains(t, err, "newer club-local (state version 7; this one reads version 1)")
	})
}

func TestReadJSONNamesAFileThatDoesNotParse(t *testing.T) {
	p := filepath.Join(t.TempDir(), "checkpoints.json")
	var v map[string]uint64
	ok, err := ReadJSON(p, &v)
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, os.WriteFile(p, []byte("{"), 0o600))
	_, err = ReadJSON(p, &v)
	require.ErrorContains(t, err, p)
	require.ErrorContains(t, err, "make reset")
}

func TestJournalKeepsEveryAppendedLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "streams", "club.jsonl")
	check := func(line []byte) error {
		if !json.Valid(line) {
			return errors.New("not JSON")
		}
		return nil
	}
	j, lines, torn, err := OpenJournal(p, check)
	require.NoError(t, err)
	require.Empty(t, lines)
	require.False(t, torn)
	require.NoError(t, j.Append([]byte(`{"seq":1}`), []byte(`{"seq":2}`)))
	require.NoError(t, j.Append([]byte(`{"seq":3}`)))
	// No Close: a killed process does not close its files.

	j2, lines, torn, err := OpenJournal(p, check)
	require.NoError(t, err)
	require.False(t, torn)
	require.Equal(t, [][]byte{[]byte(`{"seq":1}`), []byte(`{"seq":2}`), []byte(`{"seq":3}`)}, lines)
	require.NoError(t, j2.Append([]byte(`{"seq":4}`)))
	require.NoError(t, j2.Close())
	require.Error(t, j2.Append([]byte(`{"seq":5}`)))

	// A last line cut short is dropped, and the journal goes on after it.
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"seq":5,"ev`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	j3, lines, torn, err := OpenJournal(p, check)
	require.NoError(t, err)
	require.True(t, torn)
	require.Len(t, lines, 4)
	require.NoError(t, j3.Append([]byte(`{"seq":5}`)))
	require.NoError(t, j3.Close())
	_, lines, torn, err = OpenJournal(p, check)
	require.NoError(t, err)
	require.False(t, torn)
	require.Len(t, lines, 5)

	// A bad line before the end is not dropped: it stops the start.
	require.NoError(t, os.WriteFile(p, []byte("{\"seq\":1}\nnot json\n{\"seq\":3}\n"), 0o600))
	_, _, _, err = OpenJournal(p, check)
	require.ErrorContains(t, err, "line 2")
	require.ErrorContains(t, err, p)
}

func TestRunningFileTellsAnUncleanStopFromAnotherRun(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, false)
	require.NoError(t, err)
	require.False(t, d.Unclean)
	require.NoError(t, d.MarkRunning())

	// This process's own marker is not another run: a kill -9 left it.
	again, err := Open(dir, false)
	require.NoError(t, err)
	require.True(t, again.Unclean, "a marker left behind means the last run did not stop")
	require.NoError(t, again.MarkStopped())
	clean, err := Open(dir, false)
	require.NoError(t, err)
	require.False(t, clean.Unclean)
	require.NoError(t, clean.MarkStopped(), "stopping twice is fine")

	// A live process of another id runs on it: refused, even with fresh.
	require.NoError(t, os.WriteFile(filepath.Join(dir, RunningFile), []byte(strconv.Itoa(os.Getppid())+"\n"), 0o600))
	for _, fresh := range []bool{false, true} {
		_, err = Open(dir, fresh)
		require.ErrorContains(t, err, "another local cloud runs on it")
		require.ErrorContains(t, err, dir)
	}
	_, err = os.Stat(filepath.Join(dir, FormatFile))
	require.NoError(t, err, "fresh removed nothing")
}
