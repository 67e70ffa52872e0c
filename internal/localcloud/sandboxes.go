package localcloud

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/clubdev/club/internal/sandbox/mail"
	"github.com/clubdev/club/internal/sandbox/payment"
)

// Parameters the local cloud supplies to templates that declare them.
const (
	ParamMailAPIURL           = "MailApiUrl"
	ParamPaymentAPIURL        = "PaymentApiUrl"
	ParamPaymentWebhookSecret = "PaymentWebhookSecret"
)

// sandboxes prepares the mail and payment sandboxes (§7 of the spec) and
// offers their URLs and the webhook secret as template parameters.
func (c *Cloud) sandboxes() ([]extra, error) {
	if c.cfg.NoSandboxes {
		return nil, nil
	}
	secret, err := localSecret(filepath.Join(c.cfg.StateDir, "webhook-secret"))
	if err != nil {
		return nil, err
	}
	if c.cfg.LocalParameters == nil {
		c.cfg.LocalParameters = map[string]string{}
	}
	c.cfg.LocalParameters[ParamMailAPIURL] = "http://" + c.cfg.MailAddr
	c.cfg.LocalParameters[ParamPaymentAPIURL] = "http://" + c.cfg.PaymentAddr
	c.cfg.LocalParameters[ParamPaymentWebhookSecret] = secret

	mailSrv := mail.New(mail.Options{Logger: c.log.With("sandbox", "mail")})
	paySrv := payment.New(payment.Options{
		WebhookURL:    "http://" + c.cfg.APIAddr + "/webhooks/payments",
		WebhookSecret: []byte(secret),
		Logger:        c.log.With("sandbox", "payment"),
	})
	return []extra{
		serveExtra("mail sandbox", c.cfg.MailAddr, mailSrv, mailSrv.Shutdown),
		serveExtra("payment sandbox", c.cfg.PaymentAddr, paySrv, paySrv.Shutdown),
	}, nil
}

// serveExtra serves h on the claimed listener; stop shuts the sandbox down
// (releasing requests it holds on purpose) and then the server.
func serveExtra(name, addr string, h http.Handler, shutdown func(context.Context) error) extra {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	return extra{
		name: name,
		addr: addr,
		start: func(ln net.Listener) error {
			go func() { _ = srv.Serve(ln) }()
			return nil
		},
		stop: func(ctx context.Context) error {
			return errors.Join(shutdown(ctx), srv.Shutdown(ctx))
		},
	}
}
