package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/clubdev/club/internal/club"
	"github.com/clubdev/club/internal/club/operation"
)

func operationKey(id string) (pk, sk string) { return "OPERATION#" + id, "OPERATION" }

type operationItem struct {
	PK              string `dynamodbav:"pk"`
	SK              string `dynamodbav:"sk"`
	Entity          string `dynamodbav:"entity"`
	OperationID     string `dynamodbav:"operation_id"`
	Kind            string `dynamodbav:"kind"`
	ClassID         string `dynamodbav:"class_id"`
	CreatedBy       string `dynamodbav:"created_by"`
	Status          string `dynamodbav:"status"`
	CreatedAt       string `dynamodbav:"created_at"`
	UpdatedAt       string `dynamodbav:"updated_at"`
	ResultURL       string `dynamodbav:"result_url,omitempty"`
	ResultRows      int    `dynamodbav:"result_rows,omitempty"`
	ResultExpiresAt string `dynamodbav:"result_expires_at,omitempty"`
	ResultObjectKey string `dynamodbav:"result_object_key,omitempty"`
	ErrorCode       string `dynamodbav:"error_code,omitempty"`
	ErrorMessage    string `dynamodbav:"error_message,omitempty"`
	// History is appended to by every status change: [{status, at}].
	History []historyItem `dynamodbav:"history"`
	// Version guards every read-modify-write of the row.
	Version int64 `dynamodbav:"version"`
}

// Operations implements operation.Store on the club and outbox tables.
type Operations struct{ *base }

var _ operation.Store = (*Operations)(nil)

// The create transaction's items.
const (
	operationCreateRow = iota
	operationCreateOutbox
)

// Create commits the operation (attribute_not_exists) and its job's outbox
// row in one TransactWriteItems.
func (s *Operations) Create(ctx context.Context, c operation.Creation) error {
	op := c.Operation.Snapshot()
	item, err := attributevalue.MarshalMap(newOperationItem(op, 1))
	if err != nil {
		return fmt.Errorf("create operation %s: %w", op.ID, err)
	}
	out, err := outboxPut(s.cfg.OutboxTable, c.Event, op.CreatedAt)
	if err != nil {
		return fmt.Errorf("create operation %s: %w", op.ID, err)
	}
	items := make([]types.TransactWriteItem, operationCreateOutbox+1)
	items[operationCreateRow] = types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(s.cfg.ClubTable), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}}
	items[operationCreateOutbox] = types.TransactWriteItem{Put: out}

	err = s.transact(ctx, items)
	var tc *txCancelled
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &tc):
		return fmt.Errorf("create operation %s: %w", op.ID, err)
	case tc.failed(operationCreateRow):
		return fmt.Errorf("create operation %s: %w", op.ID, operation.ErrExists)
	default:
		return fmt.Errorf("create operation %s: event id %s already used in the outbox", op.ID, c.Event.EventID)
	}
}

// Get reads an operation with a strongly consistent read.
func (s *Operations) Get(ctx context.Context, id string) (operation.Operation, error) {
	op, _, err := s.get(ctx, id)
	return op, err
}

func (s *Operations) get(ctx context.Context, id string) (operation.Operation, int64, error) {
	it, err := readItem[operationItem](ctx, s.base, itemKey(operationKey(id)), "operation "+id, operation.ErrNotFound)
	if err != nil {
		return operation.Operation{}, 0, err
	}
	op, err := it.operation()
	if err != nil {
		return operation.Operation{}, 0, fmt.Errorf("decode operation %s: %w", id, err)
	}
	return op, it.Version, nil
}

// listRounds bounds the queries of one List: with a kind to keep, a round
// may find fewer matches than the page needs, and the next round goes on
// from there; after the last, the page is returned as it is, with a cursor.
const listRounds = 4

// List queries the operations_by_creator index (created_by, newest
// created_at first), keeping q.Kind with a filter, until the page is full,
// the list ends or listRounds queries were made. The index is eventually
// consistent (see operation.Store).
func (s *Operations) List(ctx context.Context, q operation.ListQuery) (operation.Page, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.cfg.ClubTable),
		IndexName:                 aws.String(indexOperationsByCreator),
		KeyConditionExpression:    aws.String("#creator = :creator"),
		ExpressionAttributeNames:  map[string]string{"#creator": attrCreatedBy},
		ExpressionAttributeValues: map[string]types.AttributeValue{":creator": str(q.CreatedBy)},
		ScanIndexForward:          aws.Bool(false),
	}
	if q.Kind != "" {
		in.FilterExpression = aws.String("#kind = :kind")
		in.ExpressionAttributeNames["#kind"] = "kind"
		in.ExpressionAttributeValues[":kind"] = str(string(q.Kind))
	}
	if q.After != "" {
		start, err := indexStartKey(q.After, map[string]string{attrCreatedBy: q.CreatedBy})
		if err == nil {
			pk, _ := start[attrPK].(*types.AttributeValueMemberS)
			if pk == nil || !strings.HasPrefix(pk.Value, "OPERATION#") {
				err = errNotACursor
			}
		}
		if err != nil {
			return operation.Page{}, club.Invalid("cursor", "is not a cursor of this list")
		}
		in.ExclusiveStartKey = start
	}
	var page operation.Page
	for round := 0; round < listRounds && len(page.Operations) < q.Limit; round++ {
		in.Limit = aws.Int32(int32(q.Limit - len(page.Operations)))
		out, err := s.db.Query(ctx, in)
		if err != nil {
			if round == 0 && q.After != "" && isValidationError(err) {
				// The start key was well formed but not a key of the
				// index (a cursor a client made up): AWS refuses it.
				return operation.Page{}, club.Invalid("cursor", "is not a cursor of this list")
			}
			return operation.Page{}, fmt.Errorf("list operations of %s: %w", q.CreatedBy, err)
		}
		for _, item := range out.Items {
			var it operationItem
			if err := attributevalue.UnmarshalMap(item, &it); err != nil {
				return operation.Page{}, fmt.Errorf("decode operation: %w", err)
			}
			op, err := it.operation()
			if err != nil {
				return operation.Page{}, fmt.Errorf("decode operation %s: %w", it.OperationID, err)
			}
			page.Operations = append(page.Operations, op)
		}
		if len(out.LastEvaluatedKey) == 0 {
			return page, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	next, err := encodeCursor(in.ExclusiveStartKey)
	if err != nil {
		return operation.Page{}, fmt.Errorf("list operations of %s: %w", q.CreatedBy, err)
	}
	page.Next = next
	return page, nil
}

// Update is an optimistic read-modify-write (see operation.Store): the row
// is replaced by one PutItem conditional on the version it was read at.
func (s *Operations) Update(ctx context.Context, id string, change func(*operation.Operation) error) (operation.Operation, error) {
	for attempt := 1; attempt <= updateAttempts; attempt++ {
		before, version, err := s.get(ctx, id)
		if err != nil {
			return operation.Operation{}, err
		}
		after := operation.FromSnapshot(before.Snapshot())
		if err := change(&after); err != nil {
			return operation.Operation{}, fmt.Errorf("update operation %s: %w", id, err)
		}
		if after.Equal(before) {
			return after, nil
		}
		item, err := attributevalue.MarshalMap(newOperationItem(after.Snapshot(), version+1))
		if err != nil {
			return operation.Operation{}, fmt.Errorf("update operation %s: %w", id, err)
		}
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                 aws.String(s.cfg.ClubTable),
			Item:                      item,
			ConditionExpression:       aws.String("#version = :version"),
			ExpressionAttributeNames:  map[string]string{"#version": "version"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":version": num(version)},
		})
		switch {
		case err == nil:
			return after, nil
		case !isConditionFailed(err):
			return operation.Operation{}, fmt.Errorf("update operation %s: %w", id, err)
		}
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return operation.Operation{}, fmt.Errorf("update operation %s: %w", id, err)
		}
	}
	return operation.Operation{}, fmt.Errorf("update operation %s: %d attempts: %w", id, updateAttempts, club.ErrContention)
}

// isValidationError reports DynamoDB's ValidationException (a request it
// refuses as malformed, such as an ExclusiveStartKey that is not a key).
func isValidationError(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "ValidationException"
}

func newOperationItem(op operation.Snapshot, version int64) operationItem {
	pk, sk := operationKey(op.ID)
	history := make([]historyItem, len(op.History))
	for i, h := range op.History {
		history[i] = historyItem{Status: string(h.Status), At: formatTime(h.At)}
	}
	return operationItem{
		PK: pk, SK: sk, Entity: "operation",
		OperationID: op.ID, Kind: string(op.Kind), ClassID: op.ClassID, CreatedBy: op.CreatedBy,
		Status: string(op.Status), CreatedAt: formatTime(op.CreatedAt), UpdatedAt: formatTime(op.UpdatedAt),
		ResultURL: op.Result.URL, ResultRows: op.Result.Rows, ResultExpiresAt: formatTime(op.Result.ExpiresAt),
		ResultObjectKey: op.Result.ObjectKey, ErrorCode: op.Failure.Code, ErrorMessage: op.Failure.Message,
		History: history, Version: version,
	}
}

func (it operationItem) operation() (operation.Operation, error) {
	created, err := parseTime("created_at", it.CreatedAt)
	if err != nil {
		return operation.Operation{}, err
	}
	updated, err := parseTime("updated_at", it.UpdatedAt)
	if err != nil {
		return operation.Operation{}, err
	}
	expires, err := parseTime("result_expires_at", it.ResultExpiresAt)
	if err != nil {
		return operation.Operation{}, err
	}
	history := make([]operation.HistoryEntry, len(it.History))
	for i, h := range it.History {
		at, err := parseTime("history.at", h.At)
		if err != nil {
			return operation.Operation{}, err
		}
		history[i] = operation.HistoryEntry{Status: operation.Status(h.Status), At: at}
	}
	return operation.FromSnapshot(operation.Snapshot{
		ID: it.OperationID, Kind: operation.Kind(it.Kind), ClassID: it.ClassID, CreatedBy: it.CreatedBy,
		Status: operation.Status(it.Status), CreatedAt: created, UpdatedAt: updated,
		Result:  operation.Result{URL: it.ResultURL, Rows: it.ResultRows, ExpiresAt: expires, ObjectKey: it.ResultObjectKey},
		Failure: operation.Failure{Code: it.ErrorCode, Message: it.ErrorMessage},
		History: history,
	}), nil
}
