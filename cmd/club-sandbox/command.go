package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/clubdev/club/internal/sandbox/mail"
	"github.com/clubdev/club/internal/sandbox/payment"
)

// Default addresses, as the local cloud uses them.
const (
	defaultMailAddr    = "127.0.0.1:4580"
	defaultPaymentAddr = "127.0.0.1:4581"
	shutdownTimeout    = 10 * time.Second
)

// mailConfig is what the mail subcommand reads from its flags.
type mailConfig struct {
	Addr          string
	RatePerSecond float64
	Seed          uint64
}

func (c mailConfig) validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("the mail sandbox address must not be empty"))
	}
	if c.RatePerSecond <= 0 {
		errs = append(errs, errors.New("--rate must be positive"))
	}
	return usage(errors.Join(errs...))
}

// paymentConfig is what the payment subcommand reads from its flags.
type paymentConfig struct {
	Addr              string
	WebhookURL        string
	WebhookSecretFile string
	RefundDelay       time.Duration
	WebhookAttempts   int
	WebhookBackoff    time.Duration
	MaxHang           time.Duration
}

func (c paymentConfig) validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("the payment sandbox address must not be empty"))
	}
	if c.WebhookURL != "" {
		u, err := url.Parse(c.WebhookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--webhook-url %q must be an absolute http(s) URL", c.WebhookURL))
		}
		if c.WebhookSecretFile == "" {
			errs = append(errs, errors.New("--webhook-secret-file is required with --webhook-url: unsigned webhooks would all be rejected"))
		}
	}
	if c.RefundDelay <= 0 {
		errs = append(errs, errors.New("--refund-delay must be positive"))
	}
	if c.WebhookAttempts < 1 {
		errs = append(errs, errors.New("--webhook-attempts must be at least 1"))
	}
	if c.WebhookBackoff <= 0 {
		errs = append(errs, errors.New("--webhook-backoff must be positive"))
	}
	if c.MaxHang <= 0 {
		errs = append(errs, errors.New("--max-hang must be positive"))
	}
	return usage(errors.Join(errs...))
}

// options builds the sandbox options, reading the secret file.
func (c paymentConfig) options(log *slog.Logger) (payment.Options, error) {
	opts := payment.Options{
		WebhookURL:      c.WebhookURL,
		RefundDelay:     c.RefundDelay,
		WebhookAttempts: c.WebhookAttempts,
		WebhookBackoff:  c.WebhookBackoff,
		MaxHang:         c.MaxHang,
		Logger:          log,
	}
	if c.WebhookSecretFile != "" {
		raw, err := os.ReadFile(c.WebhookSecretFile)
		if err != nil {
			return opts, fmt.Errorf("read webhook secret: %w", err)
		}
		// Files written by editors and `echo` end in a newline that is not
		// part of the secret.
		opts.WebhookSecret = bytes.TrimSpace(raw)
		if len(opts.WebhookSecret) == 0 {
			return opts, fmt.Errorf("webhook secret file %s is empty", c.WebhookSecretFile)
		}
	}
	return opts, nil
}

// newRootCommand returns the command tree writing to stdout and stderr.
func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "club-sandbox",
		Short: "Run the mail and payment provider sandboxes on their own",
		Long: `club-sandbox runs local stand-ins for the external providers of the Club backend:
a mail provider (default ` + defaultMailAddr + `) and a payment provider (default ` + defaultPaymentAddr + `).
The local cloud starts both in-process; use this command when the stack runs
elsewhere (LocalStack, AWS) or to try the sandboxes by hand.

Both answer POST /_sandbox/faults to switch on the faults that reproduce a
provider's uncertainty windows, and POST /_sandbox/reset. It runs until
interrupted (Ctrl-C or SIGTERM), then shuts down gracefully.`,
		Example: `  club-sandbox mail --addr 127.0.0.1:4580
  club-sandbox payment --addr 127.0.0.1:4581 \
    --webhook-url http://127.0.0.1:3000/webhooks/payments --webhook-secret-file .club/webhook-secret
  club-sandbox all --webhook-url http://127.0.0.1:3000/webhooks/payments --webhook-secret-file .club/webhook-secret

  # Make every second send fail, reproducibly
  curl -XPOST localhost:4580/_sandbox/faults -d '{"mode":"error","rate":0.5,"seed":7}'`,
		SilenceErrors: true, // execute prints errors once
		SilenceUsage:  true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage(err) })
	log := slog.New(slog.NewTextHandler(stderr, nil))
	root.AddCommand(newMailCommand(stdout, log), newPaymentCommand(stdout, log), newAllCommand(stdout, log))
	return root
}

func addMailFlags(cmd *cobra.Command, c *mailConfig, addrFlag string) {
	cmd.Flags().StringVar(&c.Addr, addrFlag, defaultMailAddr, "address to listen on")
	cmd.Flags().Float64Var(&c.RatePerSecond, "rate", mail.DefaultRatePerSecond, "messages per second the provider takes before answering 429")
	cmd.Flags().Uint64Var(&c.Seed, "seed", 0, "seed for fault sampling (0: random)")
}

func addPaymentFlags(cmd *cobra.Command, c *paymentConfig, addrFlag string) {
	cmd.Flags().StringVar(&c.Addr, addrFlag, defaultPaymentAddr, "address to listen on")
	cmd.Flags().StringVar(&c.WebhookURL, "webhook-url", "", "where to POST webhooks, e.g. http://127.0.0.1:3000/webhooks/payments (none: events are only recorded)")
	cmd.Flags().StringVar(&c.WebhookSecretFile, "webhook-secret-file", "", "file holding the shared secret that signs webhooks")
	cmd.Flags().DurationVar(&c.RefundDelay, "refund-delay", payment.DefaultRefundDelay, "how long a refund stays pending before it succeeds")
	cmd.Flags().IntVar(&c.WebhookAttempts, "webhook-attempts", payment.DefaultWebhookAttempts, "delivery attempts per webhook")
	cmd.Flags().DurationVar(&c.WebhookBackoff, "webhook-backoff", payment.DefaultWebhookBackoff, "wait before the first webhook retry (doubles each time)")
	cmd.Flags().DurationVar(&c.MaxHang, "max-hang", payment.DefaultMaxHang, "longest a no_response fault withholds an answer")
}

func newMailCommand(stdout io.Writer, log *slog.Logger) *cobra.Command {
	var c mailConfig
	cmd := &cobra.Command{
		Use:   "mail",
		Short: "Run the mail provider sandbox",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.validate(); err != nil {
				return err
			}
			return serve(cmd.Context(), stdout, []sandbox{startMail(c, log)})
		},
	}
	addMailFlags(cmd, &c, "addr")
	return cmd
}

func newPaymentCommand(stdout io.Writer, log *slog.Logger) *cobra.Command {
	var c paymentConfig
	cmd := &cobra.Command{
		Use:   "payment",
		Short: "Run the payment provider sandbox",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.validate(); err != nil {
				return err
			}
			opts, err := c.options(log)
			if err != nil {
				return err
			}
			return serve(cmd.Context(), stdout, []sandbox{startPayment(c.Addr, opts)})
		},
	}
	addPaymentFlags(cmd, &c, "addr")
	return cmd
}

func newAllCommand(stdout io.Writer, log *slog.Logger) *cobra.Command {
	var (
		m mailConfig
		p paymentConfig
	)
	cmd := &cobra.Command{
		Use:   "all",
		Short: "Run both sandboxes in one process",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := errors.Join(m.validate(), p.validate()); err != nil {
				return err
			}
			opts, err := p.options(log)
			if err != nil {
				return err
			}
			return serve(cmd.Context(), stdout, []sandbox{startMail(m, log), startPayment(p.Addr, opts)})
		},
	}
	addMailFlags(cmd, &m, "mail-addr")
	addPaymentFlags(cmd, &p, "payment-addr")
	return cmd
}

// sandbox is what serve needs from a started sandbox.
type sandbox struct {
	name  string
	start func() error
	url   func() string
	stop  func(context.Context) error
}

func startMail(c mailConfig, log *slog.Logger) sandbox {
	s := mail.New(mail.Options{RatePerSecond: c.RatePerSecond, Seed: c.Seed, Logger: log})
	return sandbox{name: "mail", start: func() error { return s.Start(c.Addr) }, url: s.URL, stop: s.Shutdown}
}

func startPayment(addr string, opts payment.Options) sandbox {
	s := payment.New(opts)
	return sandbox{name: "payment", start: func() error { return s.Start(addr) }, url: s.URL, stop: s.Shutdown}
}

// serve starts the sandboxes, announces their URLs on stdout, and shuts
// them down when ctx ends.
func serve(ctx context.Context, stdout io.Writer, sandboxes []sandbox) error {
	var started []sandbox
	var err error
	for _, s := range sandboxes {
		if err = s.start(); err != nil {
			break
		}
		started = append(started, s)
		fmt.Fprintf(stdout, "%s sandbox listening on %s\n", s.name, s.url())
	}
	if err == nil {
		<-ctx.Done()
	}

	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	for _, s := range started {
		if serr := s.stop(shutdownCtx); serr != nil {
			err = errors.Join(err, fmt.Errorf("stop %s sandbox: %w", s.name, serr))
		}
	}
	return err
}

// execute runs the command with args (without the program name) and returns
// the process exit status: 0 after a clean shutdown, 1 when a sandbox could
// not start or stop, 2 when the command was called wrongly.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "club-sandbox: %v\n", err)
	if _, ok := errors.AsType[*usageError](err); ok || isCobraUsageError(err) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return 2
	}
	return 1
}

// usageError marks an error in how the command was called.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usage marks err, if any, as a usage error.
func usage(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err: err}
}

// isCobraUsageError recognises the errors cobra raises itself before any
// command runs (unknown command, bad arguments), which it does not route
// through the flag error function.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, prefix := range []string{"unknown command", "accepts ", "requires "} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}
