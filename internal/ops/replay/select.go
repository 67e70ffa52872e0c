package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB is the part of *dynamodb.Client that Select uses.
type DynamoDB interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

var _ DynamoDB = (*dynamodb.Client)(nil)

// Row is an outbox row: the stored event (see package store).
type Row struct {
	EventID   string    `dynamodbav:"event_id" json:"event_id"`
	Type      string    `dynamodbav:"type" json:"type"`
	Payload   string    `dynamodbav:"payload" json:"-"` // the envelope JSON, as published
	CreatedAt time.Time `dynamodbav:"-" json:"created_at"`
	Created   string    `dynamodbav:"created_at" json:"-"`
	Status    string    `dynamodbav:"status" json:"status"`
}

// storeTimeLayout is how package store writes created_at: fixed-width UTC,
// so that string order is time order and the Scan can filter on it.
const storeTimeLayout = "2006-01-02T15:04:05.000000000Z"

// Window is where a replay starts: at a time or at an event (inclusive).
// Exactly one of Since and FromEventID is set.
type Window struct {
	Since       time.Time
	FromEventID string
}

// Selection is what a window holds.
type Selection struct {
	// Start is when the window starts: Since, or the From event's created_at.
	Start time.Time
	// Rows are the published events to re-deliver, oldest first (by
	// created_at, then event_id).
	Rows []Row
	// Pending counts the window's rows not published yet: the relay and the
	// sweeper still owe them, so a replay leaves them alone.
	Pending int
	// Skipped counts the window's events the consumer does not receive.
	Skipped int
}

// ErrUnknownEvent is returned (wrapped) when FromEventID names no outbox
// row: it never existed, or it was published longer ago than the outbox
// keeps rows.
var ErrUnknownEvent = errors.New("no such event in the outbox")

// Select reads the outbox rows of the window that the consumer receives
// (wanted says which types it receives). The outbox has no index by time for
// published rows, so this is a Scan filtered on created_at: it reads the
// whole table, which TTL keeps to about OUTBOX_RETENTION of events.
func Select(ctx context.Context, db DynamoDB, table string, w Window, wanted func(eventType string) bool) (Selection, error) {
	if (w.Since.IsZero()) == (w.FromEventID == "") {
		return Selection{}, errors.New("replay window: give a start time or a start event, not both")
	}
	var sel Selection
	var from *Row
	if w.FromEventID != "" {
		row, err := getRow(ctx, db, table, w.FromEventID)
		if err != nil {
			return Selection{}, err
		}
		from, sel.Start = &row, row.CreatedAt
	} else {
		sel.Start = w.Since.UTC()
	}

	in := &dynamodb.ScanInput{
		TableName:                aws.String(table),
		ConsistentRead:           aws.Bool(true),
		FilterExpression:         aws.String("created_at >= :start"),
		ProjectionExpression:     aws.String("event_id, #type, payload, created_at, #status"),
		ExpressionAttributeNames: map[string]string{"#type": "type", "#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":start": &types.AttributeValueMemberS{Value: sel.Start.Format(storeTimeLayout)},
		},
	}
	pages := dynamodb.NewScanPaginator(db, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return Selection{}, fmt.Errorf("scan outbox %s: %w", table, err)
		}
		for _, item := range page.Items {
			r, err := decodeRow(item)
			if err != nil {
				return Selection{}, err
			}
			if !inWindow(r, sel.Start, from) {
				continue
			}
			switch {
			case r.Status != "published":
				sel.Pending++
			case !wanted(r.Type):
				sel.Skipped++
			default:
				sel.Rows = append(sel.Rows, r)
			}
		}
	}
	slices.SortFunc(sel.Rows, compareRows)
	return sel, nil
}

func compareRows(a, b Row) int {
	return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.EventID, b.EventID))
}

// inWindow: at or after start; with a start event, at or after it in the
// replay order (created_at, then event_id).
func inWindow(r Row, start time.Time, from *Row) bool {
	if from != nil {
		return compareRows(r, *from) >= 0
	}
	return !r.CreatedAt.Before(start)
}

func getRow(ctx context.Context, db DynamoDB, table, eventID string) (Row, error) {
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]types.AttributeValue{"event_id": &types.AttributeValueMemberS{Value: eventID}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Row{}, fmt.Errorf("get outbox row %s: %w", eventID, err)
	}
	if len(out.Item) == 0 {
		return Row{}, fmt.Errorf("%w: %s (the outbox keeps published events for OUTBOX_RETENTION only)", ErrUnknownEvent, eventID)
	}
	return decodeRow(out.Item)
}

func decodeRow(item map[string]types.AttributeValue) (Row, error) {
	var r Row
	if err := attributevalue.UnmarshalMap(item, &r); err != nil {
		return Row{}, fmt.Errorf("decode outbox row: %w", err)
	}
	t, err := time.Parse(time.RFC3339Nano, r.Created)
	if err != nil {
		return Row{}, fmt.Errorf("outbox row %s: created_at %q: %w", r.EventID, r.Created, err)
	}
	r.CreatedAt = t.UTC()
	return r, nil
}
