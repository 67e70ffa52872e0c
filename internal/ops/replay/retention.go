package replay

import (
	"fmt"
	"time"
)

// Margin is subtracted from the inbox retention when checking a window: the
// replay itself takes time, and an inbox row that expires while its event is
// on the way no longer absorbs the duplicate.
const Margin = time.Hour

// TooOldError is a window that reaches further back than the consumer's
// inbox remembers.
type TooOldError struct {
	Start     time.Time
	Horizon   time.Time // now − retention + Margin: the oldest safe start
	Retention time.Duration
}

func (e *TooOldError) Error() string {
	return fmt.Sprintf("the window starts at %s, before %s (now minus the inbox retention of %s, plus %s of margin): "+
		"the consumer may have forgotten those events, and delivering them again would repeat their effects "+
		"(a second e-mail, a count counted twice); start the window later",
		e.Start.Format(time.RFC3339), e.Horizon.Format(time.RFC3339), formatDays(e.Retention), Margin)
}

// CheckWindow returns a *TooOldError when a window starting at start is
// older than the consumer's inbox keeps its rows (retention, less Margin).
// Inside that horizon every event the consumer processed still has its
// inbox row, so a second delivery is recognised and changes nothing.
func CheckWindow(start, now time.Time, retention time.Duration) error {
	horizon := now.Add(-retention + Margin)
	if start.Before(horizon) {
		return &TooOldError{Start: start, Horizon: horizon, Retention: retention}
	}
	return nil
}

func formatDays(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}
