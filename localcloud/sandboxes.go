package localcloud

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/clubdev/club/internal/sandbox/mail"
	"github.com/clubdev/club/internal/sandbox/payment"
)

// Parameters the local cloud supplies to templates that declare them.
const (
	ParamMailAPIURL    = "MailApiUrl"
	ParamPaymentAPIURL = "PaymentApiUrl"
)

// ParamPaymentWebhookSecretParameter is the template parameter that names the
// SSM SecureString parameter holding the payment provider's webhook secret.
// The local cloud does not supply it: it reads the name and puts its secret
// there.
const ParamPaymentWebhookSecretParameter = "PaymentWebhookSecretParameter"

// sandboxes prepares the mail and payment sandboxes (§7 of the spec), offers
// their URLs as template parameters and keeps the webhook secret for
// putWebhookSecret.
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
	c.webhookSecret = secret

	mailSrv := mail.New(mail.Options{Logger: c.log.With("sandbox", "mail")})
	paySrv := payment.New(payment.Options{
		WebhookURL:    "http://" + c.cfg.APIAddr + "/webhooks/payments",
		WebhookSecret: []byte(secret),
		Logger:        c.log.With("sandbox", "payment"),
	})
	// With a state directory, each keeps its state there (persist.go):
	// written while it runs and once more after it stopped.
	saveMail, err := keepSandbox(c.persist, "mail", mailSrv.State, mailSrv.Revision, mailSrv.Restore)
	if err != nil {
		return nil, err
	}
	savePayment, err := keepSandbox(c.persist, "payment", paySrv.State, paySrv.Revision, paySrv.Restore)
	if err != nil {
		_ = saveMail()
		return nil, err
	}
	return []extra{
		serveExtra("mail sandbox", c.cfg.MailAddr, mailSrv, thenSave(mailSrv.Shutdown, saveMail)),
		serveExtra("payment sandbox", c.cfg.PaymentAddr, paySrv, thenSave(paySrv.Shutdown, savePayment)),
	}, nil
}

// putWebhookSecret stores the webhook secret as the SecureString parameter
// the template names, as an operator does before deploying, so that the API
// finds it when it starts. It does nothing without sandboxes (no secret) or
// when the template declares no such parameter.
func (c *Cloud) putWebhookSecret(ctx context.Context, cfg aws.Config) error {
	name := c.stack.Parameters[ParamPaymentWebhookSecretParameter]
	if name == "" || c.webhookSecret == "" {
		return nil
	}
	_, err := ssm.NewFromConfig(cfg).PutParameter(ctx, &ssm.PutParameterInput{
		Name: aws.String(name), Value: aws.String(c.webhookSecret),
		Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true),
		Description: aws.String("Payment webhook secret of the local cloud (also in the state directory's webhook-secret)"),
	})
	if err != nil {
		return fmt.Errorf("put the webhook secret into SSM parameter %s: %w", name, err)
	}
	return nil
}

// thenSave shuts a sandbox down, then saves its state.
func thenSave(shutdown func(context.Context) error, save func() error) func(context.Context) error {
	return func(ctx context.Context) error { return errors.Join(shutdown(ctx), save()) }
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
