package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/clubdev/club/events"
	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/outbox"
)

type outboxItem struct {
	EventID     string `dynamodbav:"event_id"`
	Type        string `dynamodbav:"type"`
	AggregateID string `dynamodbav:"aggregate_id"`
	// Payload is the envelope JSON as a string, readable in the console and
	// in stream records.
	Payload     string `dynamodbav:"payload"`
	CreatedAt   string `dynamodbav:"created_at"`
	Status      string `dynamodbav:"status"`
	PublishedAt string `dynamodbav:"published_at,omitempty"`
	// TTL is set only when the row is published.
	TTL int64 `dynamodbav:"ttl,omitempty"`
	// UnpublishedShard is the "unpublished" index's partition key; present
	// only while the row is pending, so the index holds pending rows only.
	UnpublishedShard string `dynamodbav:"unpublished_shard,omitempty"`
}

// outboxPut is the transaction item that inserts the pending outbox row of
// env, written at at.
func outboxPut(table string, env events.Envelope, at time.Time) (*types.Put, error) {
	r, err := outbox.NewRow(env, at)
	if err != nil {
		return nil, err
	}
	item, err := attributevalue.MarshalMap(outboxItem{
		EventID: r.EventID, Type: string(r.Type), AggregateID: r.AggregateID,
		Payload: string(r.Payload), CreatedAt: formatTime(r.CreatedAt),
		Status: string(outbox.StatusPending), UnpublishedShard: unpublishedShard(r.EventID),
	})
	if err != nil {
		return nil, fmt.Errorf("outbox row %s: %w", r.EventID, err)
	}
	return &types.Put{
		TableName:           aws.String(table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(event_id)"),
	}, nil
}

func (it outboxItem) row() (outbox.Row, error) {
	created, err := parseTime("created_at", it.CreatedAt)
	if err != nil {
		return outbox.Row{}, fmt.Errorf("outbox row %s: %w", it.EventID, err)
	}
	published, err := parseTime("published_at", it.PublishedAt)
	if err != nil {
		return outbox.Row{}, fmt.Errorf("outbox row %s: %w", it.EventID, err)
	}
	return outbox.Row{
		EventID: it.EventID, Type: events.Type(it.Type), AggregateID: it.AggregateID,
		Payload: []byte(it.Payload), CreatedAt: created,
		Status: outbox.Status(it.Status), PublishedAt: published,
	}, nil
}

// Outbox implements outbox.Store on the outbox table.
type Outbox struct{ *base }

var _ outbox.Store = (*Outbox)(nil)

// MarkPublished sets status published, published_at and the expiry, and takes
// the row out of the "unpublished" index, all conditional on status pending.
func (s *Outbox) MarkPublished(ctx context.Context, eventID string, at time.Time) error {
	u := s.publishedUpdate(eventID, at)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
		ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
	})
	if err == nil {
		return nil
	}
	if !isConditionFailed(err) {
		return fmt.Errorf("mark outbox row %s published: %w", eventID, err)
	}
	// Not pending: published already (fine, keep the first mark) or missing.
	_, found, err := s.getItem(ctx, s.cfg.OutboxTable, outboxKey(eventID))
	switch {
	case err != nil:
		return fmt.Errorf("mark outbox row %s published: %w", eventID, err)
	case !found:
		return fmt.Errorf("outbox row %s: %w", eventID, club.ErrNotFound)
	default:
		return nil
	}
}

// publishedUpdate is the mark of one row: status published, published_at
// and the expiry set, the row taken out of the "unpublished" index, all
// conditional on status pending.
func (s *Outbox) publishedUpdate(eventID string, at time.Time) *types.Update {
	at = at.UTC()
	return &types.Update{
		TableName:                aws.String(s.cfg.OutboxTable),
		Key:                      outboxKey(eventID),
		UpdateExpression:         aws.String("SET #status = :published, published_at = :at, #ttl = :ttl REMOVE unpublished_shard"),
		ConditionExpression:      aws.String("#status = :pending"),
		ExpressionAttributeNames: map[string]string{"#status": "status", "#ttl": attrTTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":published": str(string(outbox.StatusPublished)),
			":pending":   str(string(outbox.StatusPending)),
			":at":        str(formatTime(at)),
			":ttl":       num(expiry(at.Add(s.cfg.OutboxRetention))),
		},
	}
}

// maxTransactItems is DynamoDB's limit of items in one transaction.
const maxTransactItems = 100

// maxBatchWriteItems is DynamoDB's limit of items in one BatchWriteItem.
const maxBatchWriteItems = 25

// batchWriteAttempts bounds the BatchWriteItem calls for one chunk whose
// items come back unprocessed (throttling).
const batchWriteAttempts = 5

// MarkAllPublished marks a relay batch of rows published, 25 rows per
// BatchWriteItem: each row is written whole, as MarkPublished leaves it
// (status published, published_at, the expiry, out of the "unpublished"
// index), from the row the relay published. It is not a transaction and
// has no condition: a transactional item costs two write units and a plain
// one one, and nothing needs the marks of a batch to be atomic. Marking is
// idempotent: a row the sweeper marked first is marked again with a later
// published_at, and outbox rows never change otherwise, so writing the whole
// row loses nothing. Items still unprocessed after a few attempts are an
// error (some rows may be marked): the relay then marks row by row (see
// relay.BatchMarker).
func (s *Outbox) MarkAllPublished(ctx context.Context, rows []outbox.Row, at time.Time) error {
	at = at.UTC()
	table := s.cfg.OutboxTable
	for start := 0; start < len(rows); start += maxBatchWriteItems {
		chunk := rows[start:min(len(rows), start+maxBatchWriteItems)]
		writes := make([]types.WriteRequest, len(chunk))
		for i, r := range chunk {
			item, err := attributevalue.MarshalMap(outboxItem{
				EventID: r.EventID, Type: string(r.Type), AggregateID: r.AggregateID,
				Payload: string(r.Payload), CreatedAt: formatTime(r.CreatedAt),
				Status: string(outbox.StatusPublished), PublishedAt: formatTime(at),
				TTL: expiry(at.Add(s.cfg.OutboxRetention)),
			})
			if err != nil {
				return fmt.Errorf("mark outbox row %s published: %w", r.EventID, err)
			}
			writes[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: item}}
		}
		for attempt := 1; len(writes) > 0; attempt++ {
			out, err := s.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: writes}})
			if err != nil {
				return fmt.Errorf("mark %d outbox rows published: %w", len(writes), err)
			}
			writes = out.UnprocessedItems[table]
			if len(writes) == 0 {
				break
			}
			if attempt == batchWriteAttempts {
				return fmt.Errorf("mark outbox rows published: %d rows unprocessed after %d attempts: %w", len(writes), attempt, club.ErrContention)
			}
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return fmt.Errorf("mark outbox rows published: %w", err)
			}
		}
	}
	return nil
}

// Unpublished queries every shard of the "unpublished" index and merges the
// results, oldest first. The index is eventually consistent: a row published
// a moment ago may still be listed (republishing it is a harmless duplicate)
// and a row inserted a moment ago may be missing (the stream delivers it).
func (s *Outbox) Unpublished(ctx context.Context, createdBefore time.Time, limit int) ([]outbox.Row, error) {
	if limit <= 0 {
		return nil, errors.New("outbox: limit must be positive")
	}
	var rows []outbox.Row
	for shard := range unpublishedShards {
		in := &dynamodb.QueryInput{
			TableName:                aws.String(s.cfg.OutboxTable),
			IndexName:                aws.String(indexUnpublished),
			KeyConditionExpression:   aws.String("#shard = :shard AND #created < :before"),
			ExpressionAttributeNames: map[string]string{"#shard": attrUnpublishedShard, "#created": attrCreatedAt},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":shard":  str(strconv.Itoa(shard)),
				":before": str(formatTime(createdBefore)),
			},
			ScanIndexForward: aws.Bool(true),
			Limit:            aws.Int32(int32(min(limit, 1000))),
		}
		// Each shard is sorted by age, so its first `limit` rows are all it
		// can contribute to the oldest `limit` overall.
		for taken := 0; taken < limit; {
			out, err := s.db.Query(ctx, in)
			if err != nil {
				return nil, fmt.Errorf("query unpublished outbox rows (shard %d): %w", shard, err)
			}
			for _, item := range out.Items {
				var it outboxItem
				if err := attributevalue.UnmarshalMap(item, &it); err != nil {
					return nil, fmt.Errorf("decode outbox row: %w", err)
				}
				if it.Status != string(outbox.StatusPending) {
					continue
				}
				r, err := it.row()
				if err != nil {
					return nil, err
				}
				rows = append(rows, r)
				taken++
			}
			if len(out.LastEvaluatedKey) == 0 {
				break
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	outbox.SortOldestFirst(rows)
	if len(rows) > limit {
		rows = rows[:limit]
	}
	return rows, nil
}

// Get reads one row with a strongly consistent read.
func (s *Outbox) Get(ctx context.Context, eventID string) (outbox.Row, error) {
	item, found, err := s.getItem(ctx, s.cfg.OutboxTable, outboxKey(eventID))
	if err != nil {
		return outbox.Row{}, fmt.Errorf("get outbox row %s: %w", eventID, err)
	}
	if !found {
		return outbox.Row{}, fmt.Errorf("outbox row %s: %w", eventID, club.ErrNotFound)
	}
	var it outboxItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return outbox.Row{}, fmt.Errorf("decode outbox row %s: %w", eventID, err)
	}
	return it.row()
}
