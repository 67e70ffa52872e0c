package store_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/store"
)

// conflictingWrites refuses the first refusals single-item writes with
// TransactionConflictException, without carrying them out, as DynamoDB
// refuses a write to an item a transaction is writing.
type conflictingWrites struct {
	*dynamodb.Client
	refusals atomic.Int64
}

func (c *conflictingWrites) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if c.refusals.Add(-1) >= 0 {
		return nil, &types.TransactionConflictException{Message: aws.String("Transaction is ongoing for the item")}
	}
	return c.Client.PutItem(ctx, in, opts...)
}

// A write that meets a transaction is tried again; one that keeps meeting
// transactions ends in club.ErrContention (429), not an internal error.
func TestWriteThatMeetsATransactionIsRetried(t *testing.T) {
	t.Parallel()
	cfg := newTables(t, store.Config{})
	db := &conflictingWrites{Client: client}
	db.refusals.Store(2)
	s, err := store.New(db, cfg)
	require.NoError(t, err)
	c, err := class.New("c-conflict", "teacher-1", "Intro", 5, time.Now().Add(48*time.Hour).UTC().Truncate(time.Second))
	require.NoError(t, err)
	require.NoError(t, s.Classes.Create(t.Context(), c))
	_, err = s.Classes.Get(t.Context(), "c-conflict")
	require.NoError(t, err)

	db.refusals.Store(100)
	other, err := class.New("c-conflict-2", "teacher-1", "Intro", 5, time.Now().Add(48*time.Hour).UTC().Truncate(time.Second))
	require.NoError(t, err)
	require.ErrorIs(t, s.Classes.Create(t.Context(), other), club.ErrContention)
}
