package queues

import (
	"fmt"
	"time"
)

// DrainState summarises how a queue's depth moved between two samples.
type DrainState string

const (
	DrainEmpty    DrainState = "empty"    // nothing to drain
	DrainDraining DrainState = "draining" // fewer messages than before
	DrainSteady   DrainState = "steady"   // as many as before: arrivals match completions
	DrainGrowing  DrainState = "growing"  // more than before: it does not drain
)

// Drain is a queue's net drain rate and the time left at that rate.
type Drain struct {
	State DrainState
	// Rate is the net number of messages leaving per second (negative when
	// growing): completions minus arrivals, as §1.8's model has it.
	Rate float64
	// ETA is the time to empty at Rate; zero unless State is DrainDraining.
	ETA time.Duration
}

// String is the drain for people, e.g. "draining 20.0/s, ETA 5m0s".
func (d Drain) String() string {
	switch d.State {
	case DrainDraining:
		return fmt.Sprintf("draining %.1f/s, ETA %s", d.Rate, d.ETA.Round(time.Second))
	case DrainGrowing:
		return fmt.Sprintf("growing %.1f/s", -d.Rate)
	default:
		return string(d.State)
	}
}

// MeasureDrain compares two samples of a queue's depth taken elapsed apart.
// It counts every message the queue owes work for (Depth.Total), so a peek
// between the samples, which only moves messages between visible and in
// flight, does not change it.
func MeasureDrain(before, after Depth, elapsed time.Duration) Drain {
	left := after.Total()
	if left == 0 {
		return Drain{State: DrainEmpty}
	}
	if elapsed <= 0 {
		return Drain{State: DrainSteady}
	}
	rate := float64(before.Total()-left) / elapsed.Seconds()
	switch {
	case rate > 0:
		return Drain{State: DrainDraining, Rate: rate, ETA: time.Duration(float64(left) / rate * float64(time.Second))}
	case rate < 0:
		return Drain{State: DrainGrowing, Rate: rate}
	default:
		return Drain{State: DrainSteady}
	}
}
