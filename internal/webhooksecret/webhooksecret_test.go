package webhooksecret

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/api"
	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/club/purchase/purchasetest"
	"github.com/clubdev/club/internal/webhooksecret/webhooksecrettest"
	"github.com/clubdev/club/internal/webhooksig"
)

// countingReader counts the API's reads of SSM.
type countingReader struct {
	ParameterReader
	reads atomic.Int32
}

func (c *countingReader) GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	c.reads.Add(1)
	return c.ParameterReader.GetParameter(ctx, in, opts...)
}

// noSaga stands in for Step Functions: these deliveries never reach it.
type noSaga struct{}

func (noSaga) SendTaskSuccess(context.Context, string, string) error         { return nil }
func (noSaga) SendTaskFailure(context.Context, string, string, string) error { return nil }

// newTestWebhooks builds the webhook handler over the parameter name, read
// through reader, with a clock offset from a fixed start, for deliveries
// about purchases that do not exist.
func newTestWebhooks(t *testing.T, reader ParameterReader, name string, offset *atomic.Int64) (*Webhooks, func() time.Time) {
	t.Helper()
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return start.Add(time.Duration(offset.Load())) }
	h, err := newRotatingWebhooks(context.Background(), rotatingWebhooksDeps{
		read: func(ctx context.Context) ([]byte, error) { return Read(ctx, reader, name) },
		build: func(secret []byte) (api.PaymentWebhooks, error) {
			return purchase.NewWebhooks(purchase.WebhooksDeps{Secret: secret, Store: purchasetest.NewMemory(),
				Callbacks: noSaga{}, Now: now})
		},
		now:    now,
		logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	return h, now
}

// The rotation rule: a delivery the current secret does not verify makes the
// API read the parameter again, at most once a minute; a changed secret is
// kept and verifies that delivery. Deliveries are for a purchase that does
// not exist, so an authentic one is told purchase.ErrUnknownPayment and a
// forged one purchase.ErrWebhookUnauthenticated.
func TestWebhookSecretRotation(t *testing.T) {
	params := webhooksecrettest.StartSSM(t)
	const name = "/club-api-test/rotation/payment-webhook-secret"
	webhooksecrettest.PutSecret(t, params, name, "secret-v1")
	reader := &countingReader{ParameterReader: params}
	var offset atomic.Int64
	h, now := newTestWebhooks(t, reader, name, &offset)
	ctx := context.Background()
	require.EqualValues(t, 1, reader.reads.Load(), "read once at start")

	body := []byte(`{"event_id":"evt-1","type":"payment.succeeded","payment_id":"pay-1","reference":"p-missing"}`)
	deliver := func(at time.Duration, secret string) error {
		offset.Store(int64(at))
		_, err := h.Handle(ctx, webhooksig.Sign([]byte(secret), now(), body), body)
		return err
	}
	steps := []struct {
		at     time.Duration
		secret string
		put    string // a new value put into SSM before the delivery
		want   error
		reads  int32 // total SSM reads afterwards
	}{
		{at: 0, secret: "secret-v1", want: purchase.ErrUnknownPayment, reads: 1},
		{at: 10 * time.Second, secret: "forged", want: purchase.ErrWebhookUnauthenticated, reads: 1},                      // the start read was 10 s ago
		{at: 30 * time.Second, secret: "secret-v2", put: "secret-v2", want: purchase.ErrWebhookUnauthenticated, reads: 1}, // rotated, but too soon to look
		{at: 30 * time.Second, secret: "secret-v1", want: purchase.ErrUnknownPayment, reads: 1},                           // the old secret still works meanwhile
		{at: time.Minute, secret: "secret-v2", want: purchase.ErrUnknownPayment, reads: 2},                                // a minute on: read, rotated
		{at: time.Minute + time.Second, secret: "secret-v2", want: purchase.ErrUnknownPayment, reads: 2},                  // no read when it verifies
		{at: time.Minute + 2*time.Second, secret: "secret-v1", want: purchase.ErrWebhookUnauthenticated, reads: 2},        // the old one no longer
		{at: 2 * time.Minute, secret: "forged", want: purchase.ErrWebhookUnauthenticated, reads: 3},                       // read, unchanged
		{at: 2*time.Minute + 59*time.Second, secret: "forged", want: purchase.ErrWebhookUnauthenticated, reads: 3},        // forgeries cost one read a minute
	}
	for i, s := range steps {
		if s.put != "" {
			webhooksecrettest.PutSecret(t, params, name, s.put)
		}
		require.ErrorIs(t, deliver(s.at, s.secret), s.want, "step %d", i)
		require.Equal(t, s.reads, reader.reads.Load(), "step %d: SSM reads", i)
	}

	// A failed re-read keeps the secret the API has.
	_, err := params.DeleteParameter(ctx, &ssm.DeleteParameterInput{Name: aws.String(name)})
	require.NoError(t, err)
	require.ErrorIs(t, deliver(4*time.Minute, "forged"), purchase.ErrWebhookUnauthenticated)
	require.EqualValues(t, 4, reader.reads.Load())
	require.ErrorIs(t, deliver(4*time.Minute, "secret-v2"), purchase.ErrUnknownPayment)
}

// A secret missing at start: deliveries and Health answer 503
// webhook_secret_unavailable, SSM is read again at most once a minute, and
// the first read that finds the secret makes the webhook work.
func TestWebhookSecretMissingAtStart(t *testing.T) {
	params := webhooksecrettest.StartSSM(t)
	const name = "/club-api-test/late/payment-webhook-secret"
	reader := &countingReader{ParameterReader: params}
	var offset atomic.Int64
	h, now := newTestWebhooks(t, reader, name, &offset)
	ctx := context.Background()
	body := []byte(`{"event_id":"evt-1","type":"payment.succeeded","payment_id":"pay-1","reference":"p-missing"}`)
	deliver := func(at time.Duration) error {
		offset.Store(int64(at))
		_, err := h.Handle(ctx, webhooksig.Sign([]byte("late-secret"), now(), body), body)
		return err
	}
	unavailable := func(err error) {
		t.Helper()
		ue, ok := errors.AsType[*api.UnavailableError](err)
		require.True(t, ok, "%v", err)
		require.Equal(t, api.CodeWebhookSecretUnavailable, ue.Code)
		require.Contains(t, ue.Message, "SSM parameter "+name+" does not exist")
	}
	unavailable(deliver(0))
	unavailable(h.Health(ctx))
	require.EqualValues(t, 1, reader.reads.Load(), "only the start read within the minute")

	webhooksecrettest.PutSecret(t, params, name, "late-secret")
	unavailable(deliver(30 * time.Second)) // too soon to look again
	require.EqualValues(t, 1, reader.reads.Load())
	require.ErrorIs(t, deliver(time.Minute), purchase.ErrUnknownPayment, "read, and the delivery verified")
	require.EqualValues(t, 2, reader.reads.Load())
	require.NoError(t, h.Health(ctx))
	require.ErrorIs(t, deliver(time.Minute+time.Second), purchase.ErrUnknownPayment)
	require.EqualValues(t, 2, reader.reads.Load(), "no read once it has the secret")
}
