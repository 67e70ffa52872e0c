package conformance_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// sparseTable holds five items, of which only those with both of the index's
// key attributes (g and r) are in index "by-g": b1, b2 and b3.
func sparseTable(t *testing.T, c *dynamodb.Client, p types.ProjectionType, include ...string) string {
	t.Helper()
	tbl := table(t, c, false, gsi("by-g", "g", "r", p, include...))
	for _, it := range []map[string]types.AttributeValue{
		{"pk": s("b3"), "g": s("G"), "r": s("3"), "x": s("x3"), "y": s("y3")},
		{"pk": s("n1"), "g": s("G"), "x": s("no range key")},
		{"pk": s("b1"), "g": s("G"), "r": s("1"), "x": s("x1"), "y": s("y1")},
		{"pk": s("n2"), "r": s("2"), "x": s("no hash key")},
		{"pk": s("b2"), "g": s("G"), "r": s("2"), "x": s("x2"), "y": s("y2")},
	} {
		put(t, c, tbl, it)
	}
	return tbl
}

// A Scan of an index reads only the items that have every key attribute of
// the index.
func TestDynamoDBSparseIndexScan(t *testing.T) {
	cite(t, docSparse)
	t.Parallel()
	c := ddb(t)
	tbl := sparseTable(t, c, types.ProjectionTypeAll)
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(tbl), IndexName: aws.String("by-g")})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"b1", "b2", "b3"}, strs(out.Items, "pk"))
	require.EqualValues(t, 3, out.Count)
	require.EqualValues(t, 3, out.ScannedCount)
}

// A Query of an index finds only items with every key attribute of the
// index, in the order of the index's sort key.
func TestDynamoDBSparseIndexQuery(t *testing.T) {
	cite(t, docSparse)
	t.Parallel()
	c := ddb(t)
	tbl := sparseTable(t, c, types.ProjectionTypeAll)
	out, err := c.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("by-g"),
		KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("G")}})
	require.NoError(t, err)
	require.Equal(t, []string{"b1", "b2", "b3"}, strs(out.Items, "pk"))
	require.EqualValues(t, 3, out.ScannedCount)
}

// A KEYS_ONLY index holds the table's and the index's key attributes and
// nothing else.
func TestDynamoDBKeysOnlyIndexProjection(t *testing.T) {
	cite(t, docGSI)
	t.Parallel()
	c := ddb(t)
	tbl := sparseTable(t, c, types.ProjectionTypeKeysOnly)
	out, err := c.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("by-g"),
		KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("G")}})
	require.NoError(t, err)
	require.Len(t, out.Items, 3)
	for _, it := range out.Items {
		require.Equal(t, []string{"g", "pk", "r"}, attrNames(it))
	}
	sc, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(tbl), IndexName: aws.String("by-g")})
	require.NoError(t, err)
	require.Len(t, sc.Items, 3)
	for _, it := range sc.Items {
		require.Equal(t, []string{"g", "pk", "r"}, attrNames(it))
	}
}

// An INCLUDE index holds the keys and the attributes it names.
func TestDynamoDBIncludeIndexProjection(t *testing.T) {
	cite(t, docGSI)
	t.Parallel()
	c := ddb(t)
	tbl := sparseTable(t, c, types.ProjectionTypeInclude, "x")
	out, err := c.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("by-g"),
		KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("G")}})
	require.NoError(t, err)
	require.Len(t, out.Items, 3)
	for _, it := range out.Items {
		require.Equal(t, []string{"g", "pk", "r", "x"}, attrNames(it))
	}
}

// Limit counts the items read from the index (a sparse index has only its
// keyed items); LastEvaluatedKey resumes after the last one, in either
// direction, and the last page ends the query.
func TestDynamoDBSparseIndexPagination(t *testing.T) {
	cite(t, docQueryAPI)
	t.Parallel()
	c := ddb(t)
	tbl := sparseTable(t, c, types.ProjectionTypeAll)
	for _, forward := range []bool{true, false} {
		in := &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("by-g"), Limit: aws.Int32(2),
			ScanIndexForward:       aws.Bool(forward),
			KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("G")}}
		var pages [][]string
		for {
			out, err := c.Query(context.Background(), in)
			require.NoError(t, err)
			pages = append(pages, strs(out.Items, "pk"))
			if out.LastEvaluatedKey == nil {
				break
			}
			require.Equal(t, []string{"g", "pk", "r"}, attrNames(out.LastEvaluatedKey), "an index's LastEvaluatedKey holds the table's and the index's keys")
			in.ExclusiveStartKey = out.LastEvaluatedKey
			require.Less(t, len(pages), 5, "the query ends")
		}
		if forward {
			require.Equal(t, [][]string{{"b1", "b2"}, {"b3"}}, pages)
		} else {
			require.Equal(t, [][]string{{"b3", "b2"}, {"b1"}}, pages)
		}
	}
}

// With a FilterExpression, Limit still counts the items read before the
// filter: a page can be empty and still have a LastEvaluatedKey.
func TestDynamoDBSparseIndexLimitCountsBeforeTheFilter(t *testing.T) {
	cite(t, docQueryAPI)
	t.Parallel()
	c := ddb(t)
	tbl := sparseTable(t, c, types.ProjectionTypeAll)
	out, err := c.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("by-g"), Limit: aws.Int32(2),
		KeyConditionExpression: aws.String("g = :g"), FilterExpression: aws.String("x = :x"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("G"), ":x": s("x2")}})
	require.NoError(t, err)
	require.Equal(t, []string{"b2"}, strs(out.Items, "pk"))
	require.EqualValues(t, 1, out.Count)
	require.EqualValues(t, 2, out.ScannedCount)
	require.Equal(t, s("b2"), out.LastEvaluatedKey["pk"])
}

// ProjectionExpression with nested paths returns those parts of the item:
// a map's member and a list's element.
func TestDynamoDBNestedProjection(t *testing.T) {
	cite(t, docProjections)
	t.Parallel()
	c := ddb(t)
	tbl := table(t, c, false)
	put(t, c, tbl, map[string]types.AttributeValue{"pk": s("a"), "top": s("t"),
		"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"a": s("ma"), "b": s("mb")}},
		"l": l(s("l0"), s("l1"), s("l2"))})
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(tbl),
		Key: map[string]types.AttributeValue{"pk": s("a")}, ProjectionExpression: aws.String("m.a, l[1], #t"),
		ExpressionAttributeNames: map[string]string{"#t": "top"}})
	refusedOr(t, err, "nested ProjectionExpression", func() {
		require.Equal(t, map[string]types.AttributeValue{
			"m":   &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"a": s("ma")}},
			"l":   l(s("l1")),
			"top": s("t"),
		}, out.Item)
	})
}

// A strongly consistent read of a global secondary index is refused:
// "Consistent reads are not supported on global secondary indexes".
func TestDynamoDBConsistentReadOfAGlobalIndexIsRefused(t *testing.T) {
	cite(t, docQueryAPI)
	t.Parallel()
	c := ddb(t)
	tbl := sparseTable(t, c, types.ProjectionTypeAll)
	_, err := c.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("by-g"), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("G")}})
	require.Equal(t, "Consistent reads are not supported on global secondary indexes", validationMessage(t, err))
}

// A filter on a KEYS_ONLY index sees only the projected attributes: an
// attribute the index does not hold is absent, so x = :x matches nothing.
func TestDynamoDBFilterOnAKeysOnlyIndexSeesOnlyProjectedAttributes(t *testing.T) {
	cite(t, docGSI)
	t.Parallel()
	c := ddb(t)
	tbl := sparseTable(t, c, types.ProjectionTypeKeysOnly)
	out, err := c.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("by-g"),
		KeyConditionExpression: aws.String("g = :g"), FilterExpression: aws.String("x = :x"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": s("G"), ":x": s("x1")}})
	refusedOr(t, err, "FilterExpression on an attribute", func() {
		require.Empty(t, out.Items)
		require.EqualValues(t, 0, out.Count)
		require.EqualValues(t, 3, out.ScannedCount)
	})
}

// A local secondary index is sparse too: an item without the index's sort
// key is not in it. A KEYS_ONLY local index holds the table's keys and its
// sort key; a query of it in sort-key order pages by Limit.
func TestDynamoDBSparseLocalIndex(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/LSI.html")
	t.Parallel()
	c := ddb(t)
	ctx := context.Background()
	tbl := fmt.Sprintf("conformance-%d", tableSeq.Add(1))
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(tbl), BillingMode: types.BillingModePayPerRequest,
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS}, {AttributeName: aws.String("at"), AttributeType: types.ScalarAttributeTypeN}},
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{{IndexName: aws.String("by-at"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("at"), KeyType: types.KeyTypeRange}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}}},
	})
	require.NoError(t, err)
	for _, it := range []map[string]types.AttributeValue{
		{"pk": s("P"), "sk": s("a"), "at": n("30"), "x": s("x")},
		{"pk": s("P"), "sk": s("b"), "x": s("no at")},
		{"pk": s("P"), "sk": s("c"), "at": n("4"), "x": s("x")},
		{"pk": s("P"), "sk": s("d"), "at": n("100"), "x": s("x")},
	} {
		put(t, c, tbl, it)
	}
	in := &dynamodb.QueryInput{TableName: aws.String(tbl), IndexName: aws.String("by-at"), Limit: aws.Int32(2),
		KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("P")}}
	var pages [][]string
	for {
		out, err := c.Query(ctx, in)
		require.NoError(t, err)
		for _, it := range out.Items {
			require.Equal(t, []string{"at", "pk", "sk"}, attrNames(it))
		}
		pages = append(pages, strs(out.Items, "sk"))
		if out.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
		require.Less(t, len(pages), 5, "the query ends")
	}
	require.Equal(t, [][]string{{"c", "a"}, {"d"}}, pages, "in numeric order of at, without b")
}
