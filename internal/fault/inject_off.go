//go:build !faults

package fault

import "context"

// Enabled reports whether this build has fault points (the faults tag).
const Enabled = false

// Inject does nothing in a build without the faults tag; the compiler
// inlines it away, arguments included.
func Inject(context.Context, Point, string) error { return nil }
