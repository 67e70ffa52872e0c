package store_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/club/class"
	"github.com/clubdev/club/internal/store"
)

// lostAnswer carries out every PutItem and UpdateItem and then, as the SDK
// does after a lost answer, carries it out again and returns the second
// answer.
type lostAnswer struct {
	store.DynamoDB
	puts, updates atomic.Int64
}

func (c *lostAnswer) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.puts.Add(1)
	if _, err := c.DynamoDB.PutItem(ctx, in, opts...); err != nil {
		return nil, err
	}
	return c.DynamoDB.PutItem(ctx, in, opts...)
}

func (c *lostAnswer) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.updates.Add(1)
	if _, err := c.DynamoDB.UpdateItem(ctx, in, opts...); err != nil {
		return nil, err
	}
	return c.DynamoDB.UpdateItem(ctx, in, opts...)
}

// A class whose create's answer was lost is created, not "already exists":
// the retry fails its own condition, and the item there is the one it
// wrote. Another class under the same id still makes a create fail.
func TestCreateWhoseAnswerWasLostSucceeds(t *testing.T) {
	t.Parallel()
	cfg := newTables(t, store.Config{})
	db := &lostAnswer{DynamoDB: client}
	s, err := store.New(db, cfg)
	require.NoError(t, err)
	c, err := class.New("c-lost-answer", "teacher-1", "Intro", 5, time.Now().Add(48*time.Hour).UTC().Truncate(time.Second))
	require.NoError(t, err)
	require.NoError(t, s.Classes.Create(t.Context(), c))
	require.EqualValues(t, 1, db.puts.Load())
	got, err := s.Classes.Get(t.Context(), "c-lost-answer")
	require.NoError(t, err)
	require.Equal(t, "Intro", got.Snapshot().Title)

	plain, err := store.New(client, cfg)
	require.NoError(t, err)
	other, err := class.New("c-lost-answer", "teacher-2", "Another", 5, time.Now().Add(48*time.Hour).UTC().Truncate(time.Second))
	require.NoError(t, err)
	require.ErrorContains(t, plain.Classes.Create(t.Context(), other), "already exists")
}
