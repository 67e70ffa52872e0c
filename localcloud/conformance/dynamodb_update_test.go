package conformance_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// SET l = list_append(if_not_exists(l, :empty), :v) creates the list on the
// first update and appends to it on the next.
func TestDynamoDBListAppendIfNotExists(t *testing.T) {
	cite(t, docUpdateExpressions)
	t.Parallel()
	c := ddb(t)
	tbl := table(t, c, false)
	key := map[string]types.AttributeValue{"pk": s("a")}
	upd := func(v string) error {
		_, err := c.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
			TableName: aws.String(tbl), Key: key,
			UpdateExpression:          aws.String("SET l = list_append(if_not_exists(l, :empty), :v)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":empty": l(), ":v": l(s(v))},
		})
		return err
	}
	err := upd("x")
	refusedOr(t, err, "list_append", func() {
		require.NoError(t, upd("y"))
		require.Equal(t, l(s("x"), s("y")), get(t, c, tbl, key)["l"])
	})
}

// updated puts before, applies expr with values, and, unless the local
// cloud refuses the update as feature, asserts the attribute's value after.
func updated(t *testing.T, doc string, before types.AttributeValue, expr string, values map[string]types.AttributeValue, feature string, want types.AttributeValue) {
	t.Helper()
	cite(t, doc)
	t.Parallel()
	c := ddb(t)
	tbl := table(t, c, false)
	key := map[string]types.AttributeValue{"pk": s("a")}
	put(t, c, tbl, map[string]types.AttributeValue{"pk": s("a"), "v": before})
	_, err := c.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(tbl), Key: key, UpdateExpression: aws.String(expr), ExpressionAttributeValues: values,
	})
	refusedOr(t, err, feature, func() {
		require.Equal(t, want, get(t, c, tbl, key)["v"])
	})
}

// Arithmetic on numbers is exact decimal arithmetic: DynamoDB numbers have
// up to 38 digits of precision.
func TestDynamoDBAddDecimalIsExact(t *testing.T) {
	updated(t, docNumbers, n("0.1"), "ADD v :d", map[string]types.AttributeValue{":d": n("0.2")}, "decimal arithmetic", n("0.3"))
}

func TestDynamoDBAddIntegerToAStoredDecimal(t *testing.T) {
	updated(t, docNumbers, n("0.14"), "ADD v :one", map[string]types.AttributeValue{":one": n("1")}, "decimal arithmetic", n("1.14"))
}

func TestDynamoDBSetMinusDecimalIsExact(t *testing.T) {
	updated(t, docNumbers, n("0.3"), "SET v = v - :d", map[string]types.AttributeValue{":d": n("0.1")}, "decimal arithmetic", n("0.2"))
}

// Integer counters (what the club's seats and totals are) stay exact and are
// not refused.
func TestDynamoDBAddIntegerCounter(t *testing.T) {
	cite(t, docUpdateExpressions)
	t.Parallel()
	c := ddb(t)
	tbl := table(t, c, false)
	key := map[string]types.AttributeValue{"pk": s("a")}
	for range 3 {
		_, err := c.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
			TableName: aws.String(tbl), Key: key, UpdateExpression: aws.String("ADD n :one SET m = if_not_exists(m, :zero) + :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1"), ":zero": n("0")},
		})
		require.NoError(t, err)
	}
	it := get(t, c, tbl, key)
	require.Equal(t, n("3"), it["n"])
	require.Equal(t, n("3"), it["m"])
}

// SET l[1] = :v replaces the list's second element; REMOVE l[0] removes
// the first, and the others move up.
func TestDynamoDBSetListElement(t *testing.T) {
	updated(t, docUpdateExpressions, l(s("x"), s("y"), s("z")), "SET v[1] = :v", map[string]types.AttributeValue{":v": s("Y")}, "list element", l(s("x"), s("Y"), s("z")))
}

func TestDynamoDBRemoveListElement(t *testing.T) {
	updated(t, docUpdateExpressions, l(s("x"), s("y"), s("z")), "REMOVE v[0]", nil, "list element", l(s("y"), s("z")))
}

// The legacy Expected parameter guards a write as a ConditionExpression
// does: a value that does not match fails the write.
func TestDynamoDBLegacyExpectedGuardsTheWrite(t *testing.T) {
	cite(t, docExpected)
	t.Parallel()
	c := ddb(t)
	tbl := table(t, c, false)
	key := map[string]types.AttributeValue{"pk": s("a")}
	put(t, c, tbl, map[string]types.AttributeValue{"pk": s("a"), "v": s("old")})
	_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s("a"), "v": s("new")},
		Expected: map[string]types.ExpectedAttributeValue{"v": {Value: s("other")}},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		require.Equal(t, s("old"), get(t, c, tbl, key)["v"])
		return
	}
	refusedByDesign(t, err, "Expected")
	require.Equal(t, s("old"), get(t, c, tbl, key)["v"], "a refused write changes nothing")
}

// ReturnValuesOnConditionCheckFailure ALL_OLD: the ConditionalCheckFailed
// error carries the item as it is.
func TestDynamoDBReturnValuesOnConditionCheckFailure(t *testing.T) {
	cite(t, docPutItemAPI)
	t.Parallel()
	c := ddb(t)
	tbl := table(t, c, false)
	put(t, c, tbl, map[string]types.AttributeValue{"pk": s("a"), "v": s("old")})
	_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s("a"), "v": s("new")},
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	require.ErrorAs(t, err, &ccf)
	require.Equal(t, map[string]types.AttributeValue{"pk": s("a"), "v": s("old")}, ccf.Item)
}

// A BatchWriteItem answer always has UnprocessedItems (empty when every
// write was done).
func TestDynamoDBBatchWriteItemHasUnprocessedItems(t *testing.T) {
	cite(t, docBatchWriteAPI)
	t.Parallel()
	c := ddb(t)
	tbl := table(t, c, false)
	out, err := c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		tbl: {{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"pk": s("a")}}},
			{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"pk": s("b")}}}},
	}})
	require.NoError(t, err)
	require.NotNil(t, out.UnprocessedItems, "UnprocessedItems is in the answer")
	require.Empty(t, out.UnprocessedItems)
	require.NotNil(t, get(t, c, tbl, map[string]types.AttributeValue{"pk": s("b")}))
}

// ReturnConsumedCapacity TOTAL: a write of an item under 1 KB consumes one
// write unit, an eventually consistent read of it half a read unit, a
// strongly consistent one a whole unit.
func TestDynamoDBConsumedCapacityWhenAskedFor(t *testing.T) {
	cite(t, docCapacity)
	t.Parallel()
	c := ddb(t)
	tbl := table(t, c, false)
	ctx := context.Background()
	pout, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl),
		Item: map[string]types.AttributeValue{"pk": s("a"), "v": s("small")}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	require.NoError(t, err)
	require.NotNil(t, pout.ConsumedCapacity)
	require.Equal(t, tbl, aws.ToString(pout.ConsumedCapacity.TableName))
	require.Equal(t, 1.0, aws.ToFloat64(pout.ConsumedCapacity.CapacityUnits))
	gout, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("a")},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	require.NoError(t, err)
	require.NotNil(t, gout.ConsumedCapacity)
	require.Equal(t, 0.5, aws.ToFloat64(gout.ConsumedCapacity.CapacityUnits))
	gout, err = c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("a")},
		ConsistentRead: aws.Bool(true), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	require.NoError(t, err)
	require.NotNil(t, gout.ConsumedCapacity)
	require.Equal(t, 1.0, aws.ToFloat64(gout.ConsumedCapacity.CapacityUnits))
}

// A table's ARN is accepted wherever its name is.
func TestDynamoDBTableARNAsTableName(t *testing.T) {
	cite(t, docGetItemAPI)
	t.Parallel()
	c := ddb(t)
	tbl := table(t, c, false)
	ctx := context.Background()
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tbl)})
	require.NoError(t, err)
	arn := d.Table.TableArn
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: arn, Item: map[string]types.AttributeValue{"pk": s("a"), "v": s("1")}})
	require.NoError(t, err)
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: arn, Key: map[string]types.AttributeValue{"pk": s("a")}, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Equal(t, s("1"), out.Item["v"])
	q, err := c.Query(ctx, &dynamodb.QueryInput{TableName: arn, KeyConditionExpression: aws.String("pk = :a"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":a": s("a")}})
	require.NoError(t, err)
	require.Len(t, q.Items, 1)
	bg, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		aws.ToString(arn): {Keys: []map[string]types.AttributeValue{{"pk": s("a")}}},
	}})
	require.NoError(t, err)
	require.Len(t, bg.Responses[aws.ToString(arn)], 1, "the answer is keyed by the table as the request named it")
}

// Errors say what is wrong: an item without its sort key, a key attribute
// of the wrong type and a key with an attribute too many are three
// different messages.
func TestDynamoDBKeyErrorsSayWhatIsWrong(t *testing.T) {
	cite(t, docPutItemAPI)
	t.Parallel()
	c := ddb(t)
	tbl := table(t, c, true)
	ctx := context.Background()
	msg := func(err error) string { return validationMessage(t, err) }
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s("a")}})
	require.Equal(t, "One or more parameter values were invalid: Missing the key sk in the item", msg(err))
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": n("1"), "sk": s("x")}})
	require.Equal(t, "One or more parameter values were invalid: Type mismatch for key pk expected: S actual: N", msg(err))
	_, err = c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("a")}})
	require.Equal(t, "The provided key element does not match the schema", msg(err))
}

// In a transaction, ReturnValuesOnConditionCheckFailure ALL_OLD puts the
// item in the cancellation reason of the failed condition.
func TestDynamoDBTransactionCancellationCarriesTheItem(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html")
	t.Parallel()
	c := ddb(t)
	tbl := table(t, c, false)
	put(t, c, tbl, map[string]types.AttributeValue{"pk": s("a"), "v": s("old")})
	_, err := c.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s("b")}}},
		{Put: &types.Put{TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s("a"), "v": s("new")},
			ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
	}})
	var tce *types.TransactionCanceledException
	require.ErrorAs(t, err, &tce)
	require.Len(t, tce.CancellationReasons, 2)
	require.Equal(t, "None", aws.ToString(tce.CancellationReasons[0].Code))
	require.Empty(t, tce.CancellationReasons[0].Item)
	require.Equal(t, "ConditionalCheckFailed", aws.ToString(tce.CancellationReasons[1].Code))
	require.Equal(t, map[string]types.AttributeValue{"pk": s("a"), "v": s("old")}, tce.CancellationReasons[1].Item)
}

// An expression attribute name or value that no expression uses is an
// error, named.
func TestDynamoDBUnusedExpressionAttributesAreRefused(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ExpressionAttributeNames.html")
	t.Parallel()
	c := ddb(t)
	tbl := table(t, c, false)
	ctx := context.Background()
	msg := func(err error) string { return validationMessage(t, err) }
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: map[string]types.AttributeValue{"pk": s("a")},
		ConditionExpression: aws.String("attribute_not_exists(#k)"), ExpressionAttributeNames: map[string]string{"#k": "pk", "#unused": "x"}})
	require.Equal(t, "Value provided in ExpressionAttributeNames unused in expressions: keys: {#unused}", msg(err))
	_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("a")},
		UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("1"), ":unused": s("2")}})
	require.Equal(t, "Value provided in ExpressionAttributeValues unused in expressions: keys: {:unused}", msg(err))
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: map[string]types.AttributeValue{"pk": s("a")}, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Empty(t, out.Item, "neither write was carried out")
}
