package clubctl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/clubdev/club/internal/console"
)

type consoleOptions struct {
	listen          string
	allowActions    bool
	by              string
	peek            bool
	sampleEvery     time.Duration
	providerTimeout time.Duration
}

func newConsoleCommand(g *Globals) *cobra.Command {
	var o consoleOptions
	cmd := &cobra.Command{
		Use:   "console [--listen ADDR] [--allow-actions] [--by NAME]",
		Short: "A web page over the same sources as status, dlq and reconcile",
		Long: `console serves a web page on loopback (--listen, 127.0.0.1:4590 by default) that
shows what status, dlq, reconcile and capacity print, read by the same code:

  Work classes  every queue with its class: depth, in flight, age of the oldest
                message against the class's maximum age, its DLQ; the outbox's
                unpublished rows and the streams' lag; charts of the last hour
                (sampled every --sample-every since the console started)
  Dead letters  every DLQ, and its letters: reason, attempts, when the event
                occurred and when it was dead-lettered, the message with personal
                data masked; a bounded redrive (a most and a rate) with progress
                and cancel, like an SQS message-move task
  Purchases     those a person must decide (reconcile), each with its history and
                the provider's recorded answers, and the three resolve actions
  Alarms        the stack's alarms in ALARM
  Capacity      the capacity model and its simulated drain for numbers you type
  Find          an enrollment, class, purchase, operation, event or message id:
                where it is now (club table, outbox row, inbox records, DLQ, saga
                execution) and what happened to it

It is read-only unless --allow-actions. An action then needs the session's token,
which only the console's own page holds (another site's page cannot send it), and
a reason; it is recorded with who (--by, default the operating-system user) and
why exactly as the CLI records it (a resolve in the purchase's history), and
written to stderr as one JSON line. Ctrl-C stops the console; a running redrive
finishes the batch in hand first.

Find scans the club and outbox tables, and peeks the DLQs; with --peek it also
peeks the live queues, which counts toward their messages' maxReceiveCount (see
'clubctl status --help').`,
		Example: `  # The local cloud, read-only
  clubctl console

  # Allowed to redrive and resolve, on another port
  clubctl console --allow-actions --listen 127.0.0.1:8080

  # A stack on AWS
  clubctl console --stack-file .club/prod.json`,
		Args:                  cobra.NoArgs,
		DisableFlagsInUseLine: true,
		RunE:                  func(cmd *cobra.Command, _ []string) error { return runConsole(cmd.Context(), g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:4590", "address to serve the page on (port 0: any free port)")
	f.BoolVar(&o.allowActions, "allow-actions", false, "allow redrives and resolves from the page")
	f.StringVar(&o.by, "by", "", "who acts, for the purchase's history and the audit log (default: the operating-system user)")
	f.BoolVar(&o.peek, "peek", false, "find also looks into the live queues (each look is a receive)")
	f.DurationVar(&o.sampleEvery, "sample-every", 10*time.Second, "how often the charts read the status")
	f.DurationVar(&o.providerTimeout, "provider-timeout", 5*time.Second, "how long to wait for the provider's answer on each payment")
	return cmd
}

func runConsole(ctx context.Context, g *Globals, o consoleOptions) error {
	if o.sampleEvery <= 0 {
		return usageErrorf("--sample-every %s must be positive", o.sampleEvery)
	}
	by := orOSUser(o.by)
	if o.allowActions && strings.TrimSpace(by) == "" {
		return usageErrorf("--by is required with --allow-actions: no operating-system user to name")
	}
	t, err := g.loadTarget(ctx)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.listen, err)
	}
	defer ln.Close()
	addr := ln.Addr().(*net.TCPAddr)
	opts := console.Options{AllowActions: o.allowActions, By: by, Audit: g.Stderr, SampleEvery: o.sampleEvery, Now: g.Now}
	if addr.IP.IsLoopback() {
		// Only this machine's pages reach a loopback address, unless a
		// hostile page renames it (DNS rebinding): answer only its own names.
		opts.Hosts = []string{addr.String(), fmt.Sprintf("localhost:%d", addr.Port)}
	} else {
		fmt.Fprintf(g.Stderr, "clubctl: warning: the console has no login: whoever reaches %s can read it\n", addr)
	}
	c, err := console.New(&consoleSource{g: g, t: t, by: by, peek: o.peek, providerTimeout: o.providerTimeout}, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second}
	mode := "read-only"
	if o.allowActions {
		mode = "actions allowed, as " + by
	}
	fmt.Fprintf(g.Stdout, "console: http://%s/ (%s)\n", addr, mode)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
