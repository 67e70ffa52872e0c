package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/clubdev/club/internal/club/lease"
)

type leaseItem struct {
	PK     string `dynamodbav:"pk"`
	SK     string `dynamodbav:"sk"`
	Entity string `dynamodbav:"entity"`
	Name   string `dynamodbav:"lease_name"`
	Owner  string `dynamodbav:"owner"`
	// ExpiresMs is the lease's end in Unix milliseconds: a number, so that
	// the acquire condition can compare it.
	ExpiresMs int64 `dynamodbav:"lease_expires_ms"`
}

// Leases implements lease.Store on the club table.
type Leases struct{ *base }

var _ lease.Store = (*Leases)(nil)

// Acquire is one conditional put: free, expired, or already ours.
func (s *Leases) Acquire(ctx context.Context, name, owner string, now time.Time, ttl time.Duration) (lease.Lease, error) {
	if name == "" || owner == "" || ttl <= 0 {
		return lease.Lease{}, fmt.Errorf("lease: name, owner and a positive ttl are required")
	}
	l := lease.Lease{Name: name, Owner: owner, ExpiresAt: now.Add(ttl).UTC()}
	pk, sk := leaseKey(name)
	item, err := attributevalue.MarshalMap(leaseItem{
		PK: pk, SK: sk, Entity: "lease", Name: name, Owner: owner, ExpiresMs: l.ExpiresAt.UnixMilli(),
	})
	if err != nil {
		return lease.Lease{}, fmt.Errorf("lease %s: %w", name, err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.cfg.ClubTable),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(pk) OR lease_expires_ms <= :now OR #owner = :owner"),
		ExpressionAttributeNames: map[string]string{"#owner": "owner"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": num(now.UnixMilli()), ":owner": str(owner),
		},
	})
	if isConditionFailed(err) {
		return lease.Lease{}, fmt.Errorf("lease %s: %w", name, lease.ErrHeld)
	}
	if err != nil {
		return lease.Lease{}, fmt.Errorf("lease %s: %w", name, err)
	}
	return l, nil
}

// Release deletes the lease if owner holds it.
func (s *Leases) Release(ctx context.Context, name, owner string) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.cfg.ClubTable),
		Key:                       itemKey(leaseKey(name)),
		ConditionExpression:       aws.String("#owner = :owner"),
		ExpressionAttributeNames:  map[string]string{"#owner": "owner"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":owner": str(owner)},
	})
	if err != nil && !isConditionFailed(err) {
		return fmt.Errorf("release lease %s: %w", name, err)
	}
	return nil
}
