package adversary

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"
)

// newTable creates a table keyed by pk, with a global index on gsi.
func newTable(t *testing.T, db *dynamodb.Client) string {
	t.Helper()
	name := uniqueName("items")
	_, err := db.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("gsi"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String("by-gsi"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("gsi"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
	})
	require.NoError(t, err)
	return name
}

func item(pk, gsi, v string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk},
		"gsi": &types.AttributeValueMemberS{Value: gsi}, "v": &types.AttributeValueMemberS{Value: v}}
}

func key(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}
}

func noRetries(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

// A read without ConsistentRead right after a write gets the item's
// earlier version, or no item when the write created it; a consistent read
// gets the newest.
func TestDDBStaleRead(t *testing.T) {
	t.Parallel()
	e := setup(t, "ddb.stale_read=1")
	db := dynamodb.NewFromConfig(e.aws)
	table := newTable(t, db)
	put := func(v string) {
		_, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("a", "g", v)})
		require.NoError(t, err)
	}
	put("v1")
	got, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("a")})
	require.NoError(t, err)
	require.Nil(t, got.Item, "the write that created the item is not seen yet")

	put("v2")
	got, err = db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("a")})
	require.NoError(t, err)
	require.Equal(t, &types.AttributeValueMemberS{Value: "v1"}, got.Item["v"], "the version before the latest write")

	got, err = db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("a"), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Equal(t, &types.AttributeValueMemberS{Value: "v2"}, got.Item["v"], "a consistent read is never stale")
	require.EqualValues(t, 2, e.count(DDBStaleRead))
}

// An index answers as if it had not yet seen a recent write: a new item is
// missing, a changed one shows its earlier version.
func TestDDBIndexLag(t *testing.T) {
	t.Parallel()
	e := setup(t, "ddb.gsi_lag=1")
	db := dynamodb.NewFromConfig(e.aws)
	table := newTable(t, db)
	query := func() []map[string]types.AttributeValue {
		out, err := db.Query(t.Context(), &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("by-gsi"),
			KeyConditionExpression:    aws.String("gsi = :g"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":g": &types.AttributeValueMemberS{Value: "g"}}})
		require.NoError(t, err)
		require.EqualValues(t, len(out.Items), out.Count)
		return out.Items
	}
	_, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("a", "g", "v1")})
	require.NoError(t, err)
	require.Empty(t, query(), "the index has not seen the new item yet")
	_, err = db.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key("a"),
		UpdateExpression:          aws.String("SET v = :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: "v2"}}})
	require.NoError(t, err)
	items := query()
	require.Len(t, items, 1)
	require.Equal(t, &types.AttributeValueMemberS{Value: "v1"}, items[0]["v"], "the index still shows the earlier version")
	require.EqualValues(t, 2, e.count(DDBIndexLag))
}

// A transaction is cancelled with TransactionConflict on one item and None
// on the others, and writes nothing.
func TestDDBTransactionConflict(t *testing.T) {
	t.Parallel()
	e := setup(t, "ddb.transaction_conflict=1")
	db := dynamodb.NewFromConfig(e.aws, noRetries)
	table := newTable(t, db)
	_, err := db.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(table), Item: item("a", "g", "v")}},
		{Put: &types.Put{TableName: aws.String(table), Item: item("b", "g", "v")}},
		{Put: &types.Put{TableName: aws.String(table), Item: item("c", "g", "v")}},
	}})
	var cancelled *types.TransactionCanceledException
	require.ErrorAs(t, err, &cancelled)
	codes := map[string]int{}
	for _, r := range cancelled.CancellationReasons {
		codes[aws.ToString(r.Code)]++
	}
	require.Equal(t, map[string]int{"TransactionConflict": 1, "None": 2}, codes)
	out, err := db.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(table)})
	require.NoError(t, err)
	require.Empty(t, out.Items, "a cancelled transaction writes nothing")
	require.EqualValues(t, 1, e.count(DDBTransactionConflict))
}

// A single write meets a transaction: TransactionConflictException, and
// nothing is written.
func TestDDBWriteConflict(t *testing.T) {
	t.Parallel()
	e := setup(t, "ddb.write_conflict=1")
	db := dynamodb.NewFromConfig(e.aws, noRetries)
	table := newTable(t, db)
	_, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("a", "g", "v")})
	var conflict *types.TransactionConflictException
	require.ErrorAs(t, err, &conflict)
	got, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("a"), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Nil(t, got.Item)
	require.EqualValues(t, 1, e.count(DDBWriteConflict))
}

// A data-plane call is refused with one of DynamoDB's throttling errors and
// not carried out; the SDK retries it.
func TestDDBThrottle(t *testing.T) {
	t.Parallel()
	e := setup(t, "ddb.throttle=1")
	db := dynamodb.NewFromConfig(e.aws, noRetries)
	table := newTable(t, db) // the control plane is not throttled
	seen := map[string]bool{}
	for i := range 20 {
		_, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item(string(rune('a'+i)), "g", "v")})
		var api smithy.APIError
		require.True(t, errors.As(err, &api), "%v", err)
		seen[api.ErrorCode()] = true
	}
	require.Subset(t, []string{"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded", "InternalServerError"},
		keys(seen))
	require.GreaterOrEqual(t, len(seen), 2, "the errors vary")
	require.NoError(t, e.adv.Set("", 0))
	out, err := db.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(table)})
	require.NoError(t, err)
	require.Empty(t, out.Items, "a throttled write is not carried out")
	require.EqualValues(t, 20, e.count(DDBThrottle))
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A Query of the table without ConsistentRead may miss a recent write too;
// with ConsistentRead it never does.
func TestDDBStaleQuery(t *testing.T) {
	t.Parallel()
	e := setup(t, "ddb.stale_read=1")
	db := dynamodb.NewFromConfig(e.aws)
	table := newTable(t, db)
	_, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("a", "g", "v1")})
	require.NoError(t, err)
	query := func(consistent bool) []map[string]types.AttributeValue {
		out, err := db.Query(t.Context(), &dynamodb.QueryInput{TableName: aws.String(table), ConsistentRead: aws.Bool(consistent),
			KeyConditionExpression:    aws.String("pk = :a"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":a": &types.AttributeValueMemberS{Value: "a"}}})
		require.NoError(t, err)
		return out.Items
	}
	require.Empty(t, query(false), "the new item is not seen yet")
	require.Len(t, query(true), 1)
	require.EqualValues(t, 1, e.count(DDBStaleRead))
}
