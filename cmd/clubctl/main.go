// Command clubctl operates the Club backend: it mints local tokens and
// inspects and repairs queues, dead-letter queues, replays and purchases on
// the local cloud, LocalStack or AWS. See `clubctl --help`.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/clubdev/club/internal/clubctl"
)

func main() {
	// Ctrl-C cancels the context so long-running commands stop cleanly.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := clubctl.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
