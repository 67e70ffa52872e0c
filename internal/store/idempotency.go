package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/idempotency"
)

type idempotencyItem struct {
	PK             string `dynamodbav:"pk"`
	SK             string `dynamodbav:"sk"`
	Entity         string `dynamodbav:"entity"`
	Caller         string `dynamodbav:"caller"`
	Key            string `dynamodbav:"idempotency_key"`
	Fingerprint    string `dynamodbav:"fingerprint"`
	ResponseStatus int    `dynamodbav:"response_status"`
	ResponseBody   []byte `dynamodbav:"response_body"`
	ResourceID     string `dynamodbav:"resource_id,omitempty"`
	CreatedAt      string `dynamodbav:"created_at"`
	TTL            int64  `dynamodbav:"ttl"`
}

// Idempotency implements idempotency.Store on the club table. Records are
// written by the transactions they protect (see Enrollments.Create).
type Idempotency struct{ *base }

var _ idempotency.Store = (*Idempotency)(nil)

// Get reads a record with a strongly consistent read. A record past its
// retention that TTL has not removed yet is still returned: it still
// describes what happened, and honouring it is the safe side.
func (s *Idempotency) Get(ctx context.Context, caller, key string) (idempotency.Record, error) {
	item, found, err := s.getItem(ctx, s.cfg.ClubTable, itemKey(idempotencyKey(caller, key)))
	if err != nil {
		return idempotency.Record{}, fmt.Errorf("get idempotency record: %w", err)
	}
	if !found {
		return idempotency.Record{}, fmt.Errorf("idempotency record %q: %w", key, club.ErrNotFound)
	}
	return decodeIdempotency(item)
}

func (b *base) idempotencyItem(r idempotency.Record) (map[string]types.AttributeValue, error) {
	pk, sk := idempotencyKey(r.Caller, r.Key)
	return attributevalue.MarshalMap(idempotencyItem{
		PK: pk, SK: sk, Entity: "idempotency",
		Caller: r.Caller, Key: r.Key, Fingerprint: r.Fingerprint,
		ResponseStatus: r.Response.Status, ResponseBody: r.Response.Body,
		ResourceID: r.ResourceID, CreatedAt: formatTime(r.CreatedAt),
		TTL: expiry(r.CreatedAt.Add(b.cfg.IdempotencyRetention)),
	})
}

func decodeIdempotency(item map[string]types.AttributeValue) (idempotency.Record, error) {
	var it idempotencyItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return idempotency.Record{}, fmt.Errorf("decode idempotency record: %w", err)
	}
	created, err := parseTime("created_at", it.CreatedAt)
	if err != nil {
		return idempotency.Record{}, fmt.Errorf("decode idempotency record: %w", err)
	}
	return idempotency.Record{
		Caller: it.Caller, Key: it.Key, Fingerprint: it.Fingerprint,
		Response:   idempotency.Response{Status: it.ResponseStatus, Body: it.ResponseBody},
		ResourceID: it.ResourceID, CreatedAt: created,
	}, nil
}
