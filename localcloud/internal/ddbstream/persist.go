package ddbstream

import "fmt"

// Journal keeps a Log across restarts of the local cloud (the state
// directory of `make run`). The Log calls it under its lock, so calls come
// in the order of the changes they report: Append with the records of each
// Log.Append, once they have their sequence numbers; Described with a
// stream's description when a stream appears or is enabled or disabled.
// Implementations must not call the Log back.
type Journal interface {
	Append(streamARN string, records []Record)
	Described(info StreamInfo)
}

// SetJournal makes the log report every change to j from now on. Call it
// after Restore and before the log is used.
func (l *Log) SetJournal(j Journal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.journal = j
}

// Restore puts back a stream as a journal kept it: its description and its
// records, which must be numbered 1, 2, … without a gap. It is refused for a
// stream that already holds records.
func (l *Log) Restore(info StreamInfo, records []Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.streamLocked(info.StreamARN)
	if len(s.records) > 0 {
		return fmt.Errorf("stream %s: restore into a stream that holds %d records", info.StreamARN, len(s.records))
	}
	for i, r := range records {
		if r.Seq != uint64(i)+1 {
			return fmt.Errorf("stream %s: record %d has sequence number %d", info.StreamARN, i+1, r.Seq)
		}
	}
	if info.CreatedAt.IsZero() {
		info.CreatedAt = s.info.CreatedAt
	}
	s.info = info
	s.records = append(s.records, records...)
	return nil
}

// described reports a stream's description to the journal; l.mu is held.
func (l *Log) described(s *stream) {
	if l.journal != nil {
		l.journal.Described(s.info)
	}
}
