package webhooksecret

import (
	"context"
	"crypto/hmac"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/clubdev/club/internal/api"
	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/webhooksig"
)

// RereadInterval bounds how often a signature mismatch may make the API
// read the webhook secret again: a rotated secret is picked up within a
// minute of its first use, and forged webhooks cost at most one SSM call a
// minute per function instance.
const RereadInterval = time.Minute

// ParameterReader is the one SSM call the API makes; *ssm.Client
// implements it.
type ParameterReader interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

var _ ParameterReader = (*ssm.Client)(nil)

// Read reads the SecureString parameter name, decrypted. A parameter that
// is missing, empty or not a SecureString is an error naming it; the value
// never appears in an error.
func Read(ctx context.Context, params ParameterReader, name string) ([]byte, error) {
	out, err := params.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
	var notFound *ssmtypes.ParameterNotFound
	switch {
	case errors.As(err, &notFound):
		return nil, fmt.Errorf("SSM parameter %s does not exist: put the webhook secret there as a SecureString", name)
	case err != nil:
		return nil, fmt.Errorf("read SSM parameter %s: %w", name, err)
	case out.Parameter == nil || strings.TrimSpace(aws.ToString(out.Parameter.Value)) == "":
		return nil, fmt.Errorf("SSM parameter %s is empty", name)
	case out.Parameter.Type != ssmtypes.ParameterTypeSecureString:
		return nil, fmt.Errorf("SSM parameter %s is a %s: store the webhook secret as a SecureString", name, out.Parameter.Type)
	}
	return []byte(aws.ToString(out.Parameter.Value)), nil
}

// NewWebhooks reads the webhook secret from the SSM parameter name and
// returns the webhook handler, which follows a rotation of the secret and
// waits for a secret that is missing at start.
func NewWebhooks(ctx context.Context, params ParameterReader, name string, deps purchase.WebhooksDeps, logger *slog.Logger) (*Webhooks, error) {
	return newRotatingWebhooks(ctx, rotatingWebhooksDeps{
		read: func(ctx context.Context) ([]byte, error) { return Read(ctx, params, name) },
		build: func(secret []byte) (api.PaymentWebhooks, error) {
			d := deps
			d.Secret = secret
			return purchase.NewWebhooks(d)
		},
		now:    time.Now,
		logger: logger,
	})
}

type rotatingWebhooksDeps struct {
	read   func(context.Context) ([]byte, error)
	build  func(secret []byte) (api.PaymentWebhooks, error)
	now    func() time.Time
	logger *slog.Logger
}

// Webhooks verifies webhooks with the secret read at start. After a
// signature mismatch it reads the secret again, at most once per
// RereadInterval (counted from the last read, the first one included);
// if the secret changed, it keeps the new one and verifies that delivery
// again. A failed re-read leaves the secret as it was and the delivery
// refused (the provider retries).
//
// A secret it cannot read at start (missing, empty, not a SecureString) does
// not stop the API: until a read succeeds, deliveries and Health answer an
// *api.UnavailableError naming the parameter (503
// webhook_secret_unavailable), and each of them reads again at most once per
// RereadInterval. Every other route works meanwhile. Safe for
// concurrent use: deliveries do not wait for a re-read unless they
// triggered it.
type Webhooks struct {
	rotatingWebhooksDeps
	current atomic.Pointer[verifier] // nil until a secret was read

	mu       sync.Mutex // serialises re-reads
	lastRead time.Time
	lastErr  error // why the secret could not be read; guarded by mu
}

type verifier struct {
	secret   []byte
	webhooks api.PaymentWebhooks
}

func newRotatingWebhooks(ctx context.Context, d rotatingWebhooksDeps) (*Webhooks, error) {
	r := &Webhooks{rotatingWebhooksDeps: d, lastRead: d.now()}
	secret, err := d.read(ctx)
	if err != nil {
		r.lastErr = fmt.Errorf("webhook secret: %w", err)
		d.logger.ErrorContext(ctx, "the API starts without its webhook secret: /healthz and the payment webhook answer 503 until it can be read", obs.Err(r.lastErr))
		return r, nil
	}
	h, err := d.build(secret)
	if err != nil {
		return nil, err
	}
	r.current.Store(&verifier{secret: secret, webhooks: h})
	return r, nil
}

// Health reports an *api.UnavailableError while the secret could not be
// read (looking again at most once per RereadInterval), nil once it
// was.
func (r *Webhooks) Health(ctx context.Context) error {
	_, err := r.ready(ctx)
	return err
}

// ready returns the current verifier, reading the secret first when none
// was read yet and the last attempt is old enough.
func (r *Webhooks) ready(ctx context.Context) (*verifier, error) {
	if v := r.current.Load(); v != nil {
		return v, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if v := r.current.Load(); v != nil {
		return v, nil
	}
	if now := r.now(); now.Sub(r.lastRead) >= RereadInterval {
		r.lastRead = now
		secret, err := r.read(ctx)
		if err == nil {
			var h api.PaymentWebhooks
			if h, err = r.build(secret); err == nil {
				v := &verifier{secret: secret, webhooks: h}
				r.current.Store(v)
				r.lastErr = nil
				r.logger.InfoContext(ctx, "webhook secret read: the payment webhook is available")
				return v, nil
			}
		}
		r.lastErr = fmt.Errorf("webhook secret: %w", err)
	}
	return nil, &api.UnavailableError{Code: api.CodeWebhookSecretUnavailable, Message: r.lastErr.Error()}
}

// Handle implements api.PaymentWebhooks.
func (r *Webhooks) Handle(ctx context.Context, signature string, body []byte) (purchase.WebhookResult, error) {
	v, err := r.ready(ctx)
	if err != nil {
		return purchase.WebhookResult{}, err
	}
	res, err := v.webhooks.Handle(ctx, signature, body)
	if !errors.Is(err, webhooksig.ErrBadSignature) {
		return res, err
	}
	rotated, ok := r.reread(ctx)
	if !ok {
		return res, err
	}
	return rotated.webhooks.Handle(ctx, signature, body)
}

// reread reads the secret if the last read is old enough and returns the
// verifier for a secret that changed.
func (r *Webhooks) reread(ctx context.Context) (*verifier, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if now.Sub(r.lastRead) < RereadInterval {
		return nil, false
	}
	r.lastRead = now
	secret, err := r.read(ctx)
	if err != nil {
		r.logger.WarnContext(ctx, "webhook secret: re-read after a signature mismatch failed", obs.Err(err))
		return nil, false
	}
	if hmac.Equal(secret, r.current.Load().secret) {
		return nil, false
	}
	h, err := r.build(secret)
	if err != nil {
		r.logger.WarnContext(ctx, "webhook secret: the rotated secret cannot be used", obs.Err(err))
		return nil, false
	}
	v := &verifier{secret: secret, webhooks: h}
	r.current.Store(v)
	r.logger.InfoContext(ctx, "webhook secret rotated: read a new value after a signature mismatch")
	return v, true
}
