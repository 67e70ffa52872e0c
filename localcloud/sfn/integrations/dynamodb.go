package integrations

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/clubdev/club/localcloud/sfn"
)

// DynamoDBAPI is the part of the DynamoDB client the integration calls.
type DynamoDBAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

var _ DynamoDBAPI = (*dynamodb.Client)(nil)

// Resources of the DynamoDB integration.
const (
	DynamoDBGetItem    = "arn:aws:states:::dynamodb:getItem"
	DynamoDBPutItem    = "arn:aws:states:::dynamodb:putItem"
	DynamoDBUpdateItem = "arn:aws:states:::dynamodb:updateItem"
	DynamoDBDeleteItem = "arn:aws:states:::dynamodb:deleteItem"
)

// DynamoDB runs the optimized DynamoDB integration.
type DynamoDB struct {
	client DynamoDBAPI
}

var (
	_ sfn.TaskHandler      = (*DynamoDB)(nil)
	_ sfn.ParameterChecker = (*DynamoDB)(nil)
)

// NewDynamoDB returns the DynamoDB integration.
func NewDynamoDB(c DynamoDBAPI) *DynamoDB { return &DynamoDB{client: c} }

// Register adds the four item operations. They have no callback form, as
// on AWS.
func (d *DynamoDB) Register(r *sfn.Resources) {
	for _, res := range []string{DynamoDBGetItem, DynamoDBPutItem, DynamoDBUpdateItem, DynamoDBDeleteItem} {
		r.Handle(res, d)
	}
}

var writeFields = []string{"TableName", "ConditionExpression", "ExpressionAttributeNames", "ExpressionAttributeValues",
	"ReturnValues", "ReturnConsumedCapacity", "ReturnItemCollectionMetrics", "ReturnValuesOnConditionCheckFailure"}

var dynamoFields = map[string]struct{ allowed, required []string }{
	DynamoDBGetItem: {[]string{"TableName", "Key", "ConsistentRead", "ProjectionExpression", "ExpressionAttributeNames", "ReturnConsumedCapacity"},
		[]string{"TableName", "Key"}},
	DynamoDBPutItem:    {append([]string{"Item"}, writeFields...), []string{"TableName", "Item"}},
	DynamoDBUpdateItem: {append([]string{"Key", "UpdateExpression"}, writeFields...), []string{"TableName", "Key"}},
	DynamoDBDeleteItem: {append([]string{"Key"}, writeFields...), []string{"TableName", "Key"}},
}

// CheckParameters validates the request fields of the operation.
func (d *DynamoDB) CheckParameters(resource string, fields []string) error {
	f := dynamoFields[resource]
	return checkFields(resource, fields, f.allowed, f.required)
}

// dynamoRequest holds every field the four operations accept.
type dynamoRequest struct {
	TableName                           string                     `json:"TableName"`
	Key                                 map[string]json.RawMessage `json:"Key"`
	Item                                map[string]json.RawMessage `json:"Item"`
	ConsistentRead                      *bool                      `json:"ConsistentRead"`
	ProjectionExpression                *string                    `json:"ProjectionExpression"`
	UpdateExpression                    *string                    `json:"UpdateExpression"`
	ConditionExpression                 *string                    `json:"ConditionExpression"`
	ExpressionAttributeNames            map[string]string          `json:"ExpressionAttributeNames"`
	ExpressionAttributeValues           map[string]json.RawMessage `json:"ExpressionAttributeValues"`
	ReturnValues                        string                     `json:"ReturnValues"`
	ReturnConsumedCapacity              string                     `json:"ReturnConsumedCapacity"`
	ReturnItemCollectionMetrics         string                     `json:"ReturnItemCollectionMetrics"`
	ReturnValuesOnConditionCheckFailure string                     `json:"ReturnValuesOnConditionCheckFailure"`
}

// RunTask performs the operation named by the resource.
func (d *DynamoDB) RunTask(ctx context.Context, req sfn.TaskRequest) (json.RawMessage, error) {
	var in dynamoRequest
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return nil, runtimeError("cannot decode the DynamoDB parameters: %v", err)
	}
	key, err := attributeMapFromJSON(in.Key)
	if err != nil {
		return nil, runtimeError("Key: %v", err)
	}
	values, err := attributeMapFromJSON(in.ExpressionAttributeValues)
	if err != nil {
		return nil, runtimeError("ExpressionAttributeValues: %v", err)
	}
	table := &in.TableName
	result := map[string]any{}
	var md middleware.Metadata
	switch req.Resource {
	case DynamoDBGetItem:
		out, err := d.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: key, ConsistentRead: in.ConsistentRead,
			ProjectionExpression: in.ProjectionExpression, ExpressionAttributeNames: in.ExpressionAttributeNames,
			ReturnConsumedCapacity: types.ReturnConsumedCapacity(in.ReturnConsumedCapacity)})
		if err != nil {
			return nil, d.fail(ctx, err)
		}
		if out.Item != nil {
			result["Item"] = attributeMapToJSON(out.Item)
		}
		md = out.ResultMetadata
	case DynamoDBPutItem:
		item, err := attributeMapFromJSON(in.Item)
		if err != nil {
			return nil, runtimeError("Item: %v", err)
		}
		out, err := d.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: item,
			ConditionExpression: in.ConditionExpression, ExpressionAttributeNames: in.ExpressionAttributeNames,
			ExpressionAttributeValues: values, ReturnValues: types.ReturnValue(in.ReturnValues),
			ReturnConsumedCapacity:              types.ReturnConsumedCapacity(in.ReturnConsumedCapacity),
			ReturnItemCollectionMetrics:         types.ReturnItemCollectionMetrics(in.ReturnItemCollectionMetrics),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailure(in.ReturnValuesOnConditionCheckFailure)})
		if err != nil {
			return nil, d.fail(ctx, err)
		}
		if len(out.Attributes) > 0 {
			result["Attributes"] = attributeMapToJSON(out.Attributes)
		}
		md = out.ResultMetadata
	case DynamoDBUpdateItem:
		out, err := d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: table, Key: key,
			UpdateExpression: in.UpdateExpression, ConditionExpression: in.ConditionExpression,
			ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: values,
			ReturnValues:                        types.ReturnValue(in.ReturnValues),
			ReturnConsumedCapacity:              types.ReturnConsumedCapacity(in.ReturnConsumedCapacity),
			ReturnItemCollectionMetrics:         types.ReturnItemCollectionMetrics(in.ReturnItemCollectionMetrics),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailure(in.ReturnValuesOnConditionCheckFailure)})
		if err != nil {
			return nil, d.fail(ctx, err)
		}
		if len(out.Attributes) > 0 {
			result["Attributes"] = attributeMapToJSON(out.Attributes)
		}
		md = out.ResultMetadata
	case DynamoDBDeleteItem:
		out, err := d.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: table, Key: key,
			ConditionExpression: in.ConditionExpression, ExpressionAttributeNames: in.ExpressionAttributeNames,
			ExpressionAttributeValues: values, ReturnValues: types.ReturnValue(in.ReturnValues),
			ReturnConsumedCapacity:              types.ReturnConsumedCapacity(in.ReturnConsumedCapacity),
			ReturnItemCollectionMetrics:         types.ReturnItemCollectionMetrics(in.ReturnItemCollectionMetrics),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailure(in.ReturnValuesOnConditionCheckFailure)})
		if err != nil {
			return nil, d.fail(ctx, err)
		}
		if len(out.Attributes) > 0 {
			result["Attributes"] = attributeMapToJSON(out.Attributes)
		}
		md = out.ResultMetadata
	default:
		return nil, runtimeError("unknown DynamoDB resource %s", req.Resource)
	}
	for k, v := range sdkMetadata(md) {
		result[k] = v
	}
	return marshal(result)
}

func (d *DynamoDB) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return serviceError("DynamoDB", "AmazonDynamoDBv2", err)
}
