package status

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// UnpublishedIndex is the outbox table's sparse index of pending rows (see
// package store: a row is in it only while unpublished_shard is set, that
// is, while it is pending).
const UnpublishedIndex = "unpublished"

// Scanner is the part of *dynamodb.Client that ReadOutbox uses.
type Scanner interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ Scanner = (*dynamodb.Client)(nil)

// Outbox is the state of the transactional outbox (docs/principles.md §1.14): rows not yet
// handed to the broker. Their age is a promise not yet kept.
type Outbox struct {
	Unpublished   int           `json:"unpublished"`
	OldestAge     time.Duration `json:"-"`
	OldestEventID string        `json:"oldest_event_id,omitempty"`
	OldestAt      time.Time     `json:"oldest_created_at,omitzero"`
}

type outboxRow struct {
	EventID   string `dynamodbav:"event_id"`
	CreatedAt string `dynamodbav:"created_at"`
	Status    string `dynamodbav:"status"`
}

// ReadOutbox counts the pending rows of the outbox table and finds the
// oldest. It scans the sparse "unpublished" index, which holds pending rows
// only, so the cost follows the backlog, not the table; unlike querying the
// index shard by shard it does not depend on how many shards the writers
// use. The index is eventually consistent: a row published a moment ago may
// still be counted, which is why rows are checked for status pending.
func ReadOutbox(ctx context.Context, db Scanner, table string, now time.Time) (Outbox, error) {
	var o Outbox
	in := &dynamodb.ScanInput{
		TableName:                aws.String(table),
		IndexName:                aws.String(UnpublishedIndex),
		ProjectionExpression:     aws.String("event_id, created_at, #status"),
		ExpressionAttributeNames: map[string]string{"#status": "status"},
	}
	pages := dynamodb.NewScanPaginator(db, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return Outbox{}, fmt.Errorf("scan the outbox's %s index: %w", UnpublishedIndex, err)
		}
		var rows []outboxRow
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &rows); err != nil {
			return Outbox{}, fmt.Errorf("decode outbox rows: %w", err)
		}
		for _, r := range rows {
			if r.Status != "pending" {
				continue
			}
			created, err := time.Parse(time.RFC3339Nano, r.CreatedAt)
			if err != nil {
				return Outbox{}, fmt.Errorf("outbox row %s: created_at %q: %w", r.EventID, r.CreatedAt, err)
			}
			o.Unpublished++
			if o.OldestEventID == "" || created.Before(o.OldestAt) {
				o.OldestEventID, o.OldestAt = r.EventID, created.UTC()
			}
		}
	}
	if o.Unpublished > 0 {
		o.OldestAge = max(now.Sub(o.OldestAt), 0)
	}
	return o, nil
}
