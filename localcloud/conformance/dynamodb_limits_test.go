package conformance_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"
)

// validationMessage asserts err is a ValidationException and returns its
// message.
func validationMessage(t *testing.T, err error) string {
	t.Helper()
	var api smithy.APIError
	require.ErrorAs(t, err, &api)
	require.Equal(t, "ValidationException", api.ErrorCode(), api.ErrorMessage())
	return api.ErrorMessage()
}

// An update may not change a key attribute.
func TestDynamoDBUpdateOfAKeyAttributeIsRefused(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateItem.html")
	t.Parallel()
	c := ddb(t)
	tbl := table(t, c, false)
	put(t, c, tbl, map[string]types.AttributeValue{"pk": s("a")})
	_, err := c.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("a")},
		UpdateExpression: aws.String("SET pk = :b"), ExpressionAttributeValues: map[string]types.AttributeValue{":b": s("b")}})
	require.Equal(t, "One or more parameter values were invalid: Cannot update attribute pk. This attribute is part of the key", validationMessage(t, err))
}

// An item is at most 400 KB. (moto refuses from about 405,000 bytes, a
// little under the limit: the accepted item here is 390 KB.)
func TestDynamoDBItemOver400KBIsRefused(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html")
	t.Parallel()
	c := ddb(t)
	tbl := table(t, c, false)
	_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(tbl),
		Item: map[string]types.AttributeValue{"pk": s("a"), "big": s(strings.Repeat("x", 400*1024-5))}})
	require.Equal(t, "Item size has exceeded the maximum allowed size", validationMessage(t, err))
	put(t, c, tbl, map[string]types.AttributeValue{"pk": s("b"), "big": s(strings.Repeat("x", 390*1024))})
}

// A transaction may not name one item twice.
func TestDynamoDBTransactionNamingAnItemTwiceIsRefused(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html")
	t.Parallel()
	c := ddb(t)
	tbl := table(t, c, false)
	_, err := c.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s("a"), "v": s("1")}}},
		{Put: &types.Put{TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s("a"), "v": s("2")}}},
	}})
	require.Equal(t, "Transaction request cannot include multiple operations on one item", validationMessage(t, err))
	require.Nil(t, get(t, c, tbl, map[string]types.AttributeValue{"pk": s("a")}))
}

// A BatchWriteItem holds at most 25 requests, and no key twice.
func TestDynamoDBBatchWriteItemLimits(t *testing.T) {
	cite(t, docBatchWriteAPI)
	t.Parallel()
	c := ddb(t)
	tbl := table(t, c, false)
	var ws []types.WriteRequest
	for i := range 26 {
		ws = append(ws, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"pk": s(fmt.Sprint(i))}}})
	}
	_, err := c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{tbl: ws}})
	validationMessage(t, err)
	_, err = c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{tbl: {ws[0], ws[0]}}})
	require.Equal(t, "Provided list of item keys contains duplicates", validationMessage(t, err))
	require.Nil(t, get(t, c, tbl, map[string]types.AttributeValue{"pk": s("0")}))
}
