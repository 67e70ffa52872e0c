package lease

import (
	"context"
	"errors"
	"time"
)

// ErrHeld: another owner holds an unexpired lease.
var ErrHeld = errors.New("lease is held by another owner")

// Lease is a claim on the work called Name until ExpiresAt.
type Lease struct {
	Name      string
	Owner     string
	ExpiresAt time.Time
}

// Store grants leases. Implementations decide with one conditional write, so
// two concurrent Acquire calls never both succeed.
type Store interface {
	// Acquire grants the lease to owner until now+ttl if it is free, expired
	// (its expiry is not after now) or already held by owner (a renewal).
	// Otherwise it returns ErrHeld.
	Acquire(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (Lease, error)
	// Release ends owner's lease early so that another owner need not wait
	// for it to expire. Releasing a lease one does not hold is a no-op.
	Release(ctx context.Context, name, owner string) error
}
