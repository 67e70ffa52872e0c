package esm

import (
	"context"
	"time"
)

// backoff is an exponential delay policy: base after the first consecutive
// failure, doubling after each further one, never more than max.
type backoff struct {
	base, max time.Duration
}

// delay returns the wait after the given number of consecutive failures
// (1 for the first).
func (b backoff) delay(failures int) time.Duration {
	if failures < 1 {
		return 0
	}
	d := b.base
	for i := 1; i < failures && d < b.max; i++ {
		d *= 2
	}
	return min(d, b.max)
}

// sleep waits for d or until ctx is done, whichever comes first, and
// returns ctx.Err() in the latter case.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
