package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/obs"
	"github.com/clubdev/club/internal/webhooksig"
)

// PaymentWebhooks applies the payment provider's signed notifications;
// *purchase.Webhooks implements it.
type PaymentWebhooks interface {
	Handle(ctx context.Context, signature string, body []byte) (purchase.WebhookResult, error)
}

type webhookDocument struct {
	EventID string                  `json:"event_id"`
	Outcome purchase.WebhookOutcome `json:"outcome"`
}

// paymentWebhook answers POST /webhooks/payments (the payment provider; no
// user token). The exact bytes received (base64-decoded when API Gateway
// encoded them) and the X-Sandbox-Signature header go to the webhook
// handler, which verifies the signature over those bytes: re-encoding the
// JSON would break it. The answer tells the provider whether to retry: 200
// for an event applied or already applied (duplicates), 401
// invalid_signature for a forged or stale one, 400 invalid_webhook and 404
// payment_not_found for events that retrying cannot fix, and a 5xx only when
// our side failed, so that the provider delivers the same event again.
func (h *Handler) paymentWebhook(ctx context.Context, r *request) (response, error) {
	res, err := h.webhooks.Handle(ctx, r.header(webhooksig.Header), r.body)
	if ev := res.Event; ev.EventID != "" {
		r.annotate(obs.EventID(ev.EventID), obs.EventType(ev.Type))
		if validID(ev.Reference) {
			r.annotate(obs.PurchaseID(ev.Reference))
		}
	}
	if err != nil {
		return response{}, err
	}
	r.annotate(slog.String("outcome", string(res.Outcome)))
	return jsonResponse(http.StatusOK, webhookDocument{EventID: res.Event.EventID, Outcome: res.Outcome})
}
