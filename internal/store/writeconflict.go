package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/clubdev/club/internal/club"
)

// retryWriteConflicts retries the single-item writes DynamoDB refuses with
// TransactionConflictException: the item is being written by a transaction
// (an enrollment's, on the class item), so the write was not carried out
// and is worth a few quick retries, as transact's are. The SDK does not
// retry that error. After transactAttempts the caller gets
// club.ErrContention, which the API answers 429.
type retryWriteConflicts struct{ DynamoDB }

func (r retryWriteConflicts) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return retryConflict(ctx, "put item", func() (*dynamodb.PutItemOutput, error) { return r.DynamoDB.PutItem(ctx, in, opts...) })
}

func (r retryWriteConflicts) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return retryConflict(ctx, "update item", func() (*dynamodb.UpdateItemOutput, error) { return r.DynamoDB.UpdateItem(ctx, in, opts...) })
}

func (r retryWriteConflicts) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return retryConflict(ctx, "delete item", func() (*dynamodb.DeleteItemOutput, error) { return r.DynamoDB.DeleteItem(ctx, in, opts...) })
}

func retryConflict[O any](ctx context.Context, what string, write func() (O, error)) (O, error) {
	for attempt := 1; ; attempt++ {
		out, err := write()
		var conflict *types.TransactionConflictException
		if !errors.As(err, &conflict) {
			return out, err
		}
		if attempt == transactAttempts {
			return out, fmt.Errorf("%s: %d attempts met a transaction: %w: %w", what, attempt, club.ErrContention, err)
		}
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return out, fmt.Errorf("%s: %w", what, err)
		}
	}
}
