// Command club-sandbox runs the mail and payment provider sandboxes on their
// own, outside the local cloud (which starts them in-process): for a stack
// on LocalStack or AWS that needs local stand-ins, or to poke at them by
// hand. See `club-sandbox --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// Ctrl-C or SIGTERM shuts the sandboxes down gracefully.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
