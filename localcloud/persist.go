package localcloud

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	_ "unsafe" // go:linkname: kumo's snapshot flush, see flushKumo

	"github.com/clubdev/club/localcloud/internal/ddbstream"
	"github.com/clubdev/club/localcloud/sfn"
	"github.com/clubdev/club/localcloud/sqsinflight"
	"github.com/clubdev/club/localcloud/state"
)

// KumoDataDirEnv is the variable kumo reads its data directory from. It is
// read once, when the process starts (each kumo service's init), so a
// persistent local cloud must be started with it set: club-local re-executes
// itself with it (cmd/club-local).
const KumoDataDirEnv = "KUMO_DATA_DIR"

// KumoFlushIntervalEnv sets how often kumo's own loop writes the snapshots
// of the services that changed, in milliseconds (kumo's default: 1000).
// club-local sets it to a day (KumoFlushIntervalOff): the local cloud writes
// them itself (snapshotLoop), so that it can pace them.
const KumoFlushIntervalEnv = "KUMO_PERSIST_FLUSH_INTERVAL_MS"

// KumoFlushIntervalOff is the KumoFlushIntervalEnv value that leaves the
// snapshots to the local cloud's snapshotLoop.
const KumoFlushIntervalOff = "86400000"

// snapshotShare bounds the share of time kumo's snapshots may take: kumo
// marshals a service's whole state under its lock, so every write to that
// service waits while its snapshot is taken (50,000 DynamoDB items: about
// half a second on the two cores measured). The interval between snapshots
// is stretched to 1/snapshotShare times the last one's duration when that
// is longer than Config.SnapshotInterval: writes are held at most 5 % of
// the time, and a kill -9 may lose that much longer.
const snapshotShare = 0.05

// persistence is what a persistent local cloud keeps in Config.DataDir
// besides kumo's snapshots (layout: package state): the stream log, the
// stream mappings' checkpoints, the SQS messages in flight, the Step
// Functions executions, the schedules' last fires and the sandboxes. Its
// methods are the hooks cloud.go and sandboxes.go call; on a nil
// *persistence (a cloud in memory) each does nothing, or what the cloud did
// without it.
type persistence struct {
	dir *state.Dir
	log *slog.Logger

	streams  *streamJournal
	inflight *sqsinflight.Keeper
	sfn      *sfnJournal

	cpMu        sync.Mutex
	checkpoints map[string]uint64 // by mapping (function source.event name)
	restoredCP  map[string]uint64

	fireMu sync.Mutex
	fires  map[string]time.Time // schedule name → schedule time of its last fire

	// snapshotLoop's lifetime; flushMu keeps its flushes and close's apart
	// (two flushes at once could let an older snapshot replace a newer).
	stopSnapshots chan struct{}
	snapshotsDone chan struct{}
	flushMu       sync.Mutex
}

// openPersistence opens Config.DataDir (which club-local has prepared with
// state.Open), checks that kumo was started with its snapshots there and
// restores the stream log into streams.
func openPersistence(cfg Config, streams *ddbstream.Log) (*persistence, error) {
	if cfg.DataDir == "" {
		return nil, nil
	}
	if cfg.Engine != "" && cfg.Engine != EngineKumo {
		return nil, fmt.Errorf("state directory %s: it keeps kumo's data; the %s engine keeps its data in memory (no DataDir)", cfg.DataDir, cfg.Engine)
	}
	dir, err := state.Open(cfg.DataDir, false)
	if err != nil {
		return nil, err
	}
	if got := os.Getenv(KumoDataDirEnv); filepath.Clean(got) != dir.Kumo() {
		return nil, fmt.Errorf("state directory %s: the emulator keeps its data where %s says when the process starts (%q); "+
			"start this process with %s=%s (club-local does so itself)", dir.Path, KumoDataDirEnv, got, KumoDataDirEnv, dir.Kumo())
	}
	p := &persistence{dir: dir, log: cfg.Logger.With("component", "state"), checkpoints: map[string]uint64{}, restoredCP: map[string]uint64{}}
	if dir.Unclean {
		p.log.Warn("the last run on this state directory did not stop cleanly (kill -9 or a crash): the tables, queues and "+
			"buckets are as of its last snapshot, so writes acknowledged in its last snapshot interval may be missing, "+
			"while the stream records and checkpoints it wrote (written at once) are all there", "dir", dir.Path)
	}
	if _, err := state.ReadJSON(dir.File("checkpoints.json"), &p.restoredCP); err != nil {
		return nil, err
	}
	for k, v := range p.restoredCP {
		p.checkpoints[k] = v
	}
	p.fires = map[string]time.Time{}
	if _, err := state.ReadJSON(dir.File("schedules.json"), &p.fires); err != nil {
		return nil, err
	}
	p.streams, err = restoreStreams(dir.Streams(), streams, p.log)
	if err != nil {
		return nil, err
	}
	streams.SetJournal(p.streams)
	// From here on Close (which Start calls on any failure) clears it.
	if err := dir.MarkRunning(); err != nil {
		_ = p.streams.close()
		return nil, fmt.Errorf("state directory %s: %w", dir.Path, err)
	}
	p.stopSnapshots, p.snapshotsDone = make(chan struct{}), make(chan struct{})
	go p.snapshotLoop(cfg.SnapshotInterval)
	records := 0
	for _, info := range streams.Streams() {
		records += int(streams.Latest(info.StreamARN))
	}
	p.log.Info("state directory", "dir", dir.Path, "streams", len(p.streams.infos), "stream_records", records,
		"checkpoints", len(p.restoredCP))
	return p, nil
}

// resumeAfter is the checkpoint a stream mapping reached in the last run,
// nil when there is none.
func (p *persistence) resumeAfter(mapping string) *uint64 {
	if p == nil {
		return nil
	}
	if v, ok := p.restoredCP[mapping]; ok {
		return &v
	}
	return nil
}

// onCheckpoint keeps a mapping's checkpoints in checkpoints.json, written
// at each change: a crash loses none, so no batch a function finished is
// delivered again after a restart.
func (p *persistence) onCheckpoint(mapping string) func(uint64) {
	if p == nil {
		return nil
	}
	return func(seq uint64) {
		p.cpMu.Lock()
		defer p.cpMu.Unlock()
		if cur, ok := p.checkpoints[mapping]; ok && cur == seq {
			return
		}
		p.checkpoints[mapping] = seq
		if err := state.WriteJSON(p.dir.File("checkpoints.json"), p.checkpoints); err != nil {
			p.log.Error("cannot keep a stream mapping's checkpoint", "mapping", mapping, "checkpoint", seq, "error", err)
		}
	}
}

// keepInFlight puts the in-flight keeper in front of SQS (next) and sends
// back to their queues the messages that were in flight when the last run
// stopped (package sqsinflight). In memory it returns next.
func (p *persistence) keepInFlight(ctx context.Context, next http.Handler) (http.Handler, error) {
	if p == nil {
		return next, nil
	}
	k, msgs, err := sqsinflight.Open(p.dir.File("sqs-inflight.jsonl"), next, p.log)
	if err != nil {
		return nil, err
	}
	p.inflight = k
	n, err := k.Redeliver(ctx, msgs)
	if err != nil {
		return nil, fmt.Errorf("messages in flight at the last stop: %w", err)
	}
	if n > 0 {
		p.log.Info("messages in flight at the last stop sent back to their queues, each visible when its visibility timeout ends", "messages", n)
	}
	return k, nil
}

// resumeExecutions restores the Step Functions executions of the last run
// from sfn.jsonl (their histories; the running ones resume: package sfn,
// ResumePoint) and journals every execution from now on.
func (p *persistence) resumeExecutions(svc *sfn.Service) error {
	if p == nil {
		return nil
	}
	var entries []sfn.JournalEntry
	j, _, torn, err := state.OpenJournal(p.dir.File("sfn.jsonl"), func(line []byte) error {
		var e sfn.JournalEntry
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return err
	}
	if torn {
		p.log.Warn("the Step Functions journal ended in a half-written line (a crash of the machine): dropped it")
	}
	p.sfn = &sfnJournal{j: j, log: p.log}
	svc.SetJournal(p.sfn)
	n, err := svc.Restore(entries)
	if err != nil {
		return fmt.Errorf("Step Functions executions of the last run (%s): %w; %s", p.dir.File("sfn.jsonl"), err, state.Fix)
	}
	if n > 0 {
		p.log.Info("Step Functions executions resumed", "executions", n)
	}
	return nil
}

// stopExecutions stops the executor: with a state directory it suspends the
// running executions, for the next run to resume, instead of aborting them.
func (p *persistence) stopExecutions(svc *sfn.Service) {
	if p == nil {
		svc.Close()
		return
	}
	svc.Suspend()
}

// sfnJournal writes sfn.JournalEntry lines.
type sfnJournal struct {
	j   *state.Journal
	log *slog.Logger
}

func (s *sfnJournal) Record(e sfn.JournalEntry) {
	line, err := json.Marshal(e)
	if err == nil {
		err = s.j.Append(line)
	}
	if err != nil {
		s.log.Error("cannot keep a Step Functions execution's progress", "execution", e.Execution, "error", err)
	}
}

// drain lets the endpoint finish the requests it is serving (at most a
// couple of seconds: a client's long poll is cut), so that what it
// acknowledged is in the state flushed next.
func (p *persistence) drain(endpoint *http.Server) {
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = endpoint.Shutdown(ctx)
}

// scheduleFires is a schedule's last fire of the last run, and the hook
// that keeps each new one in schedules.json, so that a schedule whose time
// came while the local cloud was stopped fires once at the start (package
// schedule, Options.LastFire). Only at real-time speed: schedule time run
// faster is not wall time.
func (p *persistence) scheduleFires(name string) (time.Time, func(time.Time)) {
	if p == nil {
		return time.Time{}, nil
	}
	p.fireMu.Lock()
	last := p.fires[name]
	p.fireMu.Unlock()
	return last, func(at time.Time) {
		p.fireMu.Lock()
		defer p.fireMu.Unlock()
		p.fires[name] = at
		if err := state.WriteJSON(p.dir.File("schedules.json"), p.fires); err != nil {
			p.log.Error("cannot keep a schedule's last fire", "schedule", name, "error", err)
		}
	}
}

// snapshotLoop writes kumo's changed snapshots every interval, or every
// 1/snapshotShare times the last snapshot's duration when that is longer,
// until close.
func (p *persistence) snapshotLoop(interval time.Duration) {
	defer close(p.snapshotsDone)
	if interval <= 0 {
		interval = time.Second
	}
	wait, logged := interval, interval
	for {
		select {
		case <-p.stopSnapshots:
			return
		case <-time.After(wait):
		}
		p.flushMu.Lock()
		begin := time.Now()
		flushKumo()
		took := time.Since(begin)
		p.flushMu.Unlock()
		wait = max(interval, time.Duration(float64(took)/snapshotShare))
		if wait > 2*logged || (wait == interval && logged > interval) {
			p.log.Info("snapshot interval", "interval", wait.Round(time.Millisecond), "last_snapshot_took", took.Round(time.Millisecond))
			logged = wait
		}
	}
}

// close writes kumo's snapshots one last time (the endpoint is closed:
// nothing changes them any more) and closes the journals.
func (p *persistence) close() error {
	if p == nil {
		return nil
	}
	if p.stopSnapshots != nil {
		close(p.stopSnapshots)
		<-p.snapshotsDone
	}
	p.flushMu.Lock()
	flushKumo()
	p.flushMu.Unlock()
	var errs []error
	defer func() { _ = p.dir.MarkStopped() }()
	if p.inflight != nil {
		errs = append(errs, p.inflight.Close())
	}
	if p.sfn != nil {
		errs = append(errs, p.sfn.j.Close())
	}
	return errors.Join(append(errs, p.streams.close())...)
}

// flushKumo writes every kumo snapshot that changed since its last
// background flush. kumo's Server.Close does not (its services' Close,
// which would, is only called by kumo's own command), and its storage
// package is internal, hence the linkname; the version is pinned in go.mod
// and TestPersistentCloudKeepsItsDataAcrossARestart (cmd/club-local) fails
// if the flush stops doing its work.
//
//go:linkname flushKumo github.com/sivchari/kumo/internal/storage.FlushSnapshots
func flushKumo()

// streamJournal keeps the stream log: streams.json holds every stream's
// description, <table>.jsonl each stream's records, one line each.
type streamJournal struct {
	dir string
	log *slog.Logger

	mu       sync.Mutex
	infos    map[string]ddbstream.StreamInfo
	journals map[string]*state.Journal
	closed   bool
}

func restoreStreams(dir string, into *ddbstream.Log, log *slog.Logger) (*streamJournal, error) {
	j := &streamJournal{dir: dir, log: log, infos: map[string]ddbstream.StreamInfo{}, journals: map[string]*state.Journal{}}
	if _, err := state.ReadJSON(filepath.Join(dir, "streams.json"), &j.infos); err != nil {
		return nil, err
	}
	for arn, info := range j.infos {
		path := j.path(arn)
		var records []ddbstream.Record
		jn, _, torn, err := state.OpenJournal(path, func(line []byte) error {
			var r ddbstream.Record
			if err := json.Unmarshal(line, &r); err != nil {
				return err
			}
			records = append(records, r)
			return nil
		})
		if err != nil {
			j.close()
			return nil, err
		}
		j.journals[arn] = jn
		if torn {
			log.Warn("a stream journal ended in a half-written record (a crash of the machine): dropped it", "journal", path)
		}
		if err := into.Restore(info, records); err != nil {
			j.close()
			return nil, fmt.Errorf("journal %s: %w; %s", path, err, state.Fix)
		}
	}
	return j, nil
}

// path is the journal file of a stream, named after its table.
func (j *streamJournal) path(arn string) string {
	name := arn
	if _, rest, ok := strings.Cut(arn, ":table/"); ok {
		name, _, _ = strings.Cut(rest, "/stream/")
	}
	return filepath.Join(j.dir, url.PathEscape(name)+".jsonl")
}

// Append implements ddbstream.Journal.
func (j *streamJournal) Append(arn string, records []ddbstream.Record) {
	j.mu.Lock()
	defer j.mu.Unlock()
	jn, err := j.journalLocked(arn)
	if err == nil {
		lines := make([][]byte, 0, len(records))
		for _, r := range records {
			line, merr := json.Marshal(r)
			if merr != nil {
				err = merr
				break
			}
			lines = append(lines, line)
		}
		if err == nil {
			err = jn.Append(lines...)
		}
	}
	if err != nil {
		j.log.Error("cannot keep stream records: they are lost if the local cloud stops", "stream", arn, "error", err)
	}
}

// Described implements ddbstream.Journal.
func (j *streamJournal) Described(info ddbstream.StreamInfo) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.infos[info.StreamARN] = info
	if err := state.WriteJSON(filepath.Join(j.dir, "streams.json"), j.infos); err != nil {
		j.log.Error("cannot keep a stream's description", "stream", info.StreamARN, "error", err)
	}
}

func (j *streamJournal) journalLocked(arn string) (*state.Journal, error) {
	if j.closed {
		return nil, errors.New("the stream journals are closed")
	}
	if jn, ok := j.journals[arn]; ok {
		return jn, nil
	}
	jn, lines, _, err := state.OpenJournal(j.path(arn), nil)
	if err != nil {
		return nil, err
	}
	if len(lines) > 0 {
		jn.Close()
		return nil, fmt.Errorf("journal %s holds records of a stream the log did not restore", j.path(arn))
	}
	j.journals[arn] = jn
	return jn, nil
}

func (j *streamJournal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	var errs []error
	for _, jn := range j.journals {
		errs = append(errs, jn.Close())
	}
	j.journals = map[string]*state.Journal{}
	j.closed = true
	return errors.Join(errs...)
}

// sandboxInterval is how often a sandbox's state is written when it
// changed: a kill -9 loses at most this much of it. Each write marshals
// the whole state (under the throughput benchmark, thousands of mails), so
// not more often.
const sandboxInterval = time.Second

// keepSandbox restores a sandbox from sandboxes/<name>.json and writes its
// state there every sandboxInterval while it changes (revision tells,
// cheaply, whether it did); the returned save writes it one last time
// (after the sandbox stopped). In memory it does nothing.
func keepSandbox[S any](p *persistence, name string, state func() S, revision func() string, restore func(S)) (save func() error, err error) {
	if p == nil {
		return func() error { return nil }, nil
	}
	path := filepath.Join(p.dir.Path, "sandboxes", name+".json")
	var st S
	found, err := stateRead(path, &st)
	if err != nil {
		return nil, err
	}
	if found {
		restore(st)
	}
	var mu sync.Mutex
	var last []byte
	lastRev := "\x00" // no revision yet
	write := func() error {
		mu.Lock()
		defer mu.Unlock()
		rev := revision()
		if rev == lastRev {
			return nil
		}
		raw, err := json.Marshal(state())
		if err != nil {
			return err
		}
		if bytes.Equal(raw, last) {
			return nil
		}
		if err := stateWrite(path, raw); err != nil {
			return err
		}
		last, lastRev = raw, rev
		return nil
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(sandboxInterval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				if err := write(); err != nil {
					p.log.Error("cannot keep a sandbox's state", "sandbox", name, "error", err)
				}
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return func() error {
		once.Do(func() { close(done) })
		<-stopped
		return write()
	}, nil
}

var (
	stateRead  = state.ReadJSON
	stateWrite = state.WriteFile
)
