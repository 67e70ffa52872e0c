//go:build faults

package fault

import (
	"context"
	"os"
	"sync"
)

// Enabled reports whether this build has fault points (the faults tag).
const Enabled = true

// current is built at the first pass, from the environment the local cloud
// gives every function.
var current = sync.OnceValue(func() *client { return newClient(os.Getenv, os.Stderr, os.Exit) })

// Inject reports that the program passes point p with the unit of work key
// (an idempotency key, an event id) and carries out what the control
// endpoint decides: nothing, a crash (the process exits with ExitCode), an
// *Error to return through the caller's ordinary failure path, or a delay.
// Without a reachable control endpoint it does nothing.
func Inject(ctx context.Context, p Point, key string) error {
	return current().inject(ctx, p, key)
}
