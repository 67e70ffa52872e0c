package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/clubdev/club/internal/club"
)

// DynamoDB is the part of *dynamodb.Client the adapters use.
type DynamoDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// Store bundles one adapter per domain port over one client and config.
type Store struct {
	Classes     *Classes
	Enrollments *Enrollments
	Idempotency *Idempotency
	Profiles    *Profiles
	Inbox       *Inbox
	Projections *Projections
	Outbox      *Outbox
	Leases      *Leases
	Operations  *Operations
}

// New validates cfg and returns the adapters. Build it once per process
// (in main) and share it: it holds no per-request state.
func New(db DynamoDB, cfg Config) (*Store, error) {
	if db == nil {
		return nil, errors.New("store: nil DynamoDB client")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &base{db: retryWriteConflicts{db}, cfg: cfg.withDefaults()}
	return &Store{
		Classes: &Classes{b}, Enrollments: &Enrollments{base: b}, Idempotency: &Idempotency{b},
		Profiles: &Profiles{b}, Inbox: &Inbox{b}, Projections: &Projections{b},
		Outbox: &Outbox{b}, Leases: &Leases{b}, Operations: &Operations{b},
	}, nil
}

// base is what every adapter shares.
type base struct {
	db  DynamoDB
	cfg Config
}

func (b *base) now() time.Time { return b.cfg.Now().UTC() }

// getItem reads one item with a strongly consistent read;
// found is false if it does not exist.
func (b *base) getItem(ctx context.Context, table string, k map[string]types.AttributeValue) (item map[string]types.AttributeValue, found bool, err error) {
	out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: k, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, false, err
	}
	return out.Item, len(out.Item) > 0, nil
}

// readItem reads one item of the club table with a strongly consistent read
// and decodes it into its item type I. what names the item in errors
// ("class c1"); a missing item is reported as notFound, wrapped.
func readItem[I any](ctx context.Context, b *base, k map[string]types.AttributeValue, what string, notFound error) (I, error) {
	var it I
	item, found, err := b.getItem(ctx, b.cfg.ClubTable, k)
	if err != nil {
		return it, fmt.Errorf("get %s: %w", what, err)
	}
	if !found {
		return it, fmt.Errorf("%s: %w", what, notFound)
	}
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return it, fmt.Errorf("decode %s: %w", what, err)
	}
	return it, nil
}

// Transaction retries. AWS cancels a transaction that collides with another
// one on the same item (TransactionConflict) or is throttled; both are worth
// a few quick retries with jittered backoff, after which the caller gets
// club.ErrContention. kumo serialises transactions and never reports either.
const (
	transactAttempts = 5
	transactBaseWait = 20 * time.Millisecond
)

// txCancelled is a transaction cancelled by at least one failed condition.
// codes has one entry per item: "" where the item passed ("None" on AWS, ""
// on kumo), "ConditionalCheckFailed" where its condition failed.
type txCancelled struct{ codes []string }

func (e *txCancelled) Error() string { return fmt.Sprintf("transaction cancelled: %q", e.codes) }

func (e *txCancelled) failed(i int) bool {
	return i < len(e.codes) && e.codes[i] == "ConditionalCheckFailed"
}

// transact runs a transaction. It returns nil, a *txCancelled when a
// condition failed, club.ErrContention after repeated conflicts, or another
// error.
func (b *base) transact(ctx context.Context, items []types.TransactWriteItem) error {
	for attempt := 1; ; attempt++ {
		_, err := b.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return fmt.Errorf("transact write: %w", err)
		}
		codes := make([]string, len(tce.CancellationReasons))
		retryable, conditionFailed := false, false
		for i, r := range tce.CancellationReasons {
			switch code := aws.ToString(r.Code); code {
			case "", "None":
			case "ConditionalCheckFailed":
				codes[i], conditionFailed = code, true
			case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded":
				codes[i], retryable = code, true
			default:
				codes[i] = code
				return fmt.Errorf("transact write: item %d: %s: %s", i, code, aws.ToString(r.Message))
			}
		}
		switch {
		case conditionFailed:
			// Definitive: the data says no, retrying cannot change that.
			return &txCancelled{codes: codes}
		case !retryable:
			return fmt.Errorf("transact write: cancelled without a reason: %w", err)
		case attempt == transactAttempts:
			return fmt.Errorf("transact write: %d attempts: %q: %w", attempt, codes, club.ErrContention)
		}
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return fmt.Errorf("transact write: %w", err)
		}
	}
}

// backoff is exponential with full jitter: uniformly random in
// [0, base·2^(attempt-1)), so that colliding writers spread out.
func backoff(attempt int) time.Duration {
	ceiling := transactBaseWait << (attempt - 1)
	return rand.N(ceiling)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isConditionFailed reports a failed condition of a single-item write.
func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}
