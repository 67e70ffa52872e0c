package api

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/clubdev/club/internal/club/idempotency"
	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/obs"
)

// purchaseSeat answers POST /intensives/{intensive_id}/purchases (student). The
// body is {} or absent. A seat is held and the saga's start is recorded in
// one transaction; the answer is 202 (accepted, not done) with the hold's
// deadline and Location: /purchases/{id}, where the student follows the
// purchase. A replay answers the stored status and body, with Location
// rebuilt from the body.
func (h *Handler) purchaseSeat(ctx context.Context, r *request) (response, error) {
	intensiveID := r.params["intensive_id"]
	key := r.header(HeaderIdempotencyKey)
	// Checked before the body, as for enrollments.
	if err := idempotency.ValidateKey(key); err != nil {
		return response{}, err
	}
	if err := decodeObject(r.body); err != nil {
		return response{}, err
	}
	fingerprint, err := idempotency.Fingerprint(r.method, "/intensives/"+intensiveID+"/purchases", r.body, r.caller.subject)
	if err != nil {
		return response{}, fmt.Errorf("purchase: %w", err)
	}
	res, err := h.purchases.Purchase(ctx, purchase.PurchaseRequest{
		IntensiveID:        intensiveID,
		StudentID:          r.caller.subject,
		IdempotencyKey:     key,
		RequestFingerprint: fingerprint,
		Respond:            renderPurchaseAccepted,
	})
	if err != nil {
		return response{}, err
	}
	resp := response{status: res.Response.Status, body: res.Response.Body, headers: map[string]string{}}
	var accepted purchaseAcceptedDocument
	if json.Unmarshal(res.Response.Body, &accepted) == nil && validID(accepted.PurchaseID) {
		resp.headers["Location"] = purchaseLocation(accepted.PurchaseID)
		r.annotate(obs.PurchaseID(accepted.PurchaseID))
	}
	if res.Replayed {
		resp.headers[HeaderIdempotentReplayed] = "true"
		r.annotate(slog.Bool("replayed", true))
	}
	return resp, nil
}

// purchaseLocation is where a purchase is followed.
func purchaseLocation(id string) string { return "/purchases/" + url.PathEscape(id) }

type purchaseAcceptedDocument struct {
	PurchaseID    string          `json:"purchase_id"`
	Status        purchase.Status `json:"status"`
	HoldExpiresAt time.Time       `json:"hold_expires_at"`
}

// renderPurchaseAccepted is the answer to a new purchase. The service
// stores it with the idempotency record, so a replay answers the same body.
func renderPurchaseAccepted(p purchase.Purchase) (idempotency.Response, error) {
	b, err := json.Marshal(purchaseAcceptedDocument{
		PurchaseID: p.ID(), Status: p.Status(), HoldExpiresAt: p.HoldExpiresAt().UTC(),
	})
	if err != nil {
		return idempotency.Response{}, err
	}
	return idempotency.Response{Status: http.StatusAccepted, Body: b}, nil
}

// getPurchase answers GET /purchases/{purchase_id} (its student; anyone
// else gets not_found): the business status, what the provider said about
// the payment and the refund, and every status the purchase went through.
func (h *Handler) getPurchase(ctx context.Context, r *request) (response, error) {
	p, err := h.purchases.Get(ctx, r.params["purchase_id"], r.caller.subject)
	if err != nil {
		return response{}, err
	}
	return jsonResponse(http.StatusOK, renderPurchase(p))
}

type purchaseDocument struct {
	PurchaseID    string           `json:"purchase_id"`
	IntensiveID   string           `json:"intensive_id"`
	Status        purchase.Status  `json:"status"`
	HoldExpiresAt time.Time        `json:"hold_expires_at"`
	Payment       *paymentDocument `json:"payment,omitempty"`
	Refund        *refundDocument  `json:"refund,omitempty"`
	Refunds       []refundAttempt  `json:"refunds,omitempty"`
	History       []historyEntry   `json:"history"`
}

type paymentDocument struct {
	PaymentID   string                  `json:"payment_id"`
	Status      purchase.ProviderStatus `json:"status"`
	CheckoutURL string                  `json:"checkout_url,omitempty"`
}

type refundDocument struct {
	RefundID string                  `json:"refund_id"`
	Status   purchase.ProviderStatus `json:"status"`
}

type refundAttempt struct {
	Attempt     int                     `json:"attempt"`
	RequestedAt time.Time               `json:"requested_at"`
	RefundID    string                  `json:"refund_id,omitempty"`
	Status      purchase.ProviderStatus `json:"status,omitempty"`
}

type historyEntry struct {
	Status purchase.Status `json:"status"`
	At     time.Time       `json:"at"`
}

// renderPurchase never shows the saga's task token: it would let its holder
// complete the wait for the payment.
func renderPurchase(p purchase.Purchase) purchaseDocument {
	doc := purchaseDocument{
		PurchaseID: p.ID(), IntensiveID: p.IntensiveID(), Status: p.Status(), HoldExpiresAt: p.HoldExpiresAt().UTC(),
		History: make([]historyEntry, 0, len(p.History())),
	}
	if p.PaymentID() != "" {
		doc.Payment = &paymentDocument{PaymentID: p.PaymentID(), Status: p.PaymentStatus(), CheckoutURL: p.CheckoutURL()}
	}
	if p.RefundID() != "" {
		doc.Refund = &refundDocument{RefundID: p.RefundID(), Status: p.RefundStatus()}
	}
	for i, r := range p.Refunds() {
		doc.Refunds = append(doc.Refunds, refundAttempt{Attempt: i + 1, RequestedAt: r.RequestedAt.UTC(), RefundID: r.RefundID, Status: r.Status})
	}
	for _, e := range p.History() {
		doc.History = append(doc.History, historyEntry{Status: e.Status, At: e.At.UTC()})
	}
	return doc
}
