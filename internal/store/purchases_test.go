package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club/purchase"
	"github.com/clubdev/club/internal/club/purchase/purchasetest"
	"github.com/clubdev/club/internal/store"
)

// The purchase ports' contract, on DynamoDB (kumo in process).
func TestPurchaseContract(t *testing.T) {
	t.Parallel()
	purchasetest.RunStore(t, func(t *testing.T) purchasetest.Ports {
		cfg := newTables(t, store.Config{})
		s, err := store.New(client, cfg)
		require.NoError(t, err)
		pa, err := store.NewPurchaseAdapters(client, cfg)
		require.NoError(t, err)
		return purchasetest.Ports{
			Intensives: pa.Intensives, Purchases: pa.Purchases, Idempotency: s.Idempotency, Outbox: s.Outbox,
		}
	})
}

// A purchase row written before refunds had attempts (refund_id and
// refund_status only) reads as one attempt under the key its refund was
// asked with, so the saga asks the provider again with that key.
func TestLegacyRefundRowReadsAsOneAttempt(t *testing.T) {
	t.Parallel()
	cfg := newTables(t, store.Config{})
	pa, err := store.NewPurchaseAdapters(client, cfg)
	require.NoError(t, err)
	item := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "PURCHASE#p-legacy"}, "sk": &types.AttributeValueMemberS{Value: "PURCHASE"},
		"entity": &types.AttributeValueMemberS{Value: "purchase"}, "purchase_id": &types.AttributeValueMemberS{Value: "p-legacy"},
		"intensive_id": &types.AttributeValueMemberS{Value: "in-1"}, "student_id": &types.AttributeValueMemberS{Value: "student-1"},
		"amount_cents": &types.AttributeValueMemberN{Value: "4900"}, "currency": &types.AttributeValueMemberS{Value: "EUR"},
		"status":          &types.AttributeValueMemberS{Value: "needs_reconciliation"},
		"created_at":      &types.AttributeValueMemberS{Value: "2026-01-01T10:00:00Z"},
		"hold_expires_at": &types.AttributeValueMemberS{Value: "2026-01-01T10:15:00Z"},
		"payment_id":      &types.AttributeValueMemberS{Value: "pay_1"}, "payment_status": &types.AttributeValueMemberS{Value: "succeeded"},
		"refund_id": &types.AttributeValueMemberS{Value: "re_1"}, "refund_status": &types.AttributeValueMemberS{Value: "failed"},
		"version": &types.AttributeValueMemberN{Value: "5"},
		"history": &types.AttributeValueMemberL{Value: []types.AttributeValue{
			history("reserved", "2026-01-01T10:00:00Z"), history("expired", "2026-01-01T10:15:00Z"),
			history("refund_pending", "2026-01-01T10:20:00Z"), history("needs_reconciliation", "2026-01-01T11:00:00Z"),
		}},
	}
	_, err = client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(cfg.ClubTable), Item: item})
	require.NoError(t, err)

	got, err := pa.Purchases.Get(context.Background(), "p-legacy")
	require.NoError(t, err)
	require.Equal(t, []purchase.RefundAttempt{{
		Key: purchase.LegacyRefundKey("p-legacy"), RefundID: "re_1", Status: purchase.ProviderFailed,
		RequestedAt: time.Date(2026, 1, 1, 10, 20, 0, 0, time.UTC),
	}}, got.Refunds())

	// A person's refund after it asks under the next key, and the row
	// keeps both attempts from then on.
	after, err := pa.Purchases.Update(context.Background(), "p-legacy", func(p *purchase.Purchase) error {
		return p.Resolve(purchase.Resolution{Action: purchase.ActionRefund, By: "ops-ann", Reason: "ticket 7"}, time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	})
	require.NoError(t, err)
	require.Equal(t, purchase.RefundKey("p-legacy", 2), after.RefundKey())
	again, err := pa.Purchases.Get(context.Background(), "p-legacy")
	require.NoError(t, err)
	require.Equal(t, after.Refunds(), again.Refunds())
}

func history(status, at string) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		"status": &types.AttributeValueMemberS{Value: status}, "at": &types.AttributeValueMemberS{Value: at},
	}}
}
