package billing_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/internal/billing"
)

// metered starts the emulator behind a meter (off) and returns clients
// that call it through the meter.
func metered(t *testing.T) (*billing.Meter, *dynamodb.Client, *sqs.Client) {
	t.Helper()
	srv := kumo.NewServer()
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	engine := httputil.NewSingleHostReverseProxy(u)
	m := billing.New(engine)
	front := httptest.NewServer(m.Wrap(engine))
	t.Cleanup(front.Close)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")}
	return m, dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(front.URL) }),
		sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(front.URL) })
}

// TestMeterBillsRealRequestsPerItem sends requests through the meter to the
// emulator and checks each operation's billed units.
func TestMeterBillsRealRequestsPerItem(t *testing.T) {
	m, ddb, q := metered(t)
	ctx := context.Background()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	key := func(pk string) map[string]types.AttributeValue { return map[string]types.AttributeValue{"pk": s(pk)} }

	_, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("t"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	require.NoError(t, err)
	qu, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")})
	require.NoError(t, err)

	m.Enable(true) // resets nothing: it was off
	big := strings.Repeat("x", 1500)
	_, err = ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: map[string]types.AttributeValue{"pk": s("a"), "v": s(big)}})
	require.NoError(t, err) // 1.5 KB: 2 units
	_, err = ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("b"),
		UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": s("small")}})
	require.NoError(t, err) // the item after: 1 unit
	_, err = ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key("a"), ConditionExpression: aws.String("attribute_not_exists(pk)")})
	require.Error(t, err) // refused by its condition, still billed: 1 unit
	_, err = ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("a"), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err) // 1 unit
	_, err = ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("zz")})
	require.NoError(t, err) // missing, eventually consistent: 0.5
	_, err = ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("t"), Item: key("c")}},                                                                               // 2
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String("t"), Key: key("a"), ConditionExpression: aws.String("attribute_exists(pk)")}}, // 1.5 KB: 4
		{Update: &types.Update{TableName: aws.String("t"), Key: key("b"), UpdateExpression: aws.String("SET w = :w"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":w": s(big)}}}, // after: 1.5 KB: 4
	}})
	require.NoError(t, err)
	_, err = ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key("a")})
	require.NoError(t, err) // the item before: 2
	_, err = ddb.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		"t": {Keys: []map[string]types.AttributeValue{key("b"), key("c"), key("a")}, ConsistentRead: aws.Bool(true)}}})
	require.NoError(t, err) // 3 items, each rounded up on its own: 3
	_, err = q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: qu.QueueUrl, MessageBody: aws.String(strings.Repeat("m", 70*1024))})
	require.NoError(t, err) // 70 KB: 2 requests
	_, err = q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: qu.QueueUrl, MaxNumberOfMessages: 10})
	require.NoError(t, err) // the same 70 KB: 2

	got := map[string]billing.Line{}
	for _, l := range m.Snapshot() {
		got[l.Service+" "+l.Operation] = l
	}
	require.Equal(t, int64(2), got["dynamodb PutItem"].Requests)
	require.Equal(t, 3.0, got["dynamodb PutItem"].WriteUnits)
	require.Equal(t, 1.0, got["dynamodb UpdateItem"].WriteUnits)
	require.Equal(t, 1.5, got["dynamodb GetItem"].ReadUnits)
	require.Equal(t, 10.0, got["dynamodb TransactWriteItems"].WriteUnits)
	require.Equal(t, int64(3), got["dynamodb TransactWriteItems"].TransactionItems)
	require.Equal(t, 2.0, got["dynamodb DeleteItem"].WriteUnits)
	require.Equal(t, 3.0, got["dynamodb BatchGetItem"].ReadUnits)
	require.Equal(t, int64(3), got["dynamodb BatchGetItem"].Items)
	require.Equal(t, int64(2), got["sqs SendMessage"].Billed)
	require.Equal(t, int64(2), got["sqs ReceiveMessage"].Billed)
	_, created := got["dynamodb CreateTable"]
	require.False(t, created, "nothing is counted while the meter is off")
}

// TestMeterBillsIndexWrites checks the write units of global secondary
// index entries, by AWS's rules, through the meter to the emulator: an item
// entering an index, a projected attribute changing, an index key changing
// (two), an item leaving, a refused write (none), a transaction's items
// (not doubled), and a projection that a write does not touch (none).
func TestMeterBillsIndexWrites(t *testing.T) {
	m, ddb, _ := metered(t)
	ctx := context.Background()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	key := func(pk string) map[string]types.AttributeValue { return map[string]types.AttributeValue{"pk": s(pk)} }
	set := func(expr string, values ...string) {
		t.Helper()
		vals := map[string]types.AttributeValue{}
		for i := 0; i+1 < len(values); i += 2 {
			vals[values[i]] = s(values[i+1])
		}
		in := &dynamodb.UpdateItemInput{TableName: aws.String("ix"), Key: key("a"),
			UpdateExpression: aws.String(expr), ExpressionAttributeValues: vals}
		if strings.Contains(expr, "#o") {
			in.ExpressionAttributeNames = map[string]string{"#o": "owner"} // a reserved word
		}
		_, err := ddb.UpdateItem(ctx, in)
		require.NoError(t, err)
	}
	attr := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	keys := func(names ...string) []types.KeySchemaElement {
		out := []types.KeySchemaElement{{AttributeName: aws.String(names[0]), KeyType: types.KeyTypeHash}}
		if len(names) > 1 {
			out = append(out, types.KeySchemaElement{AttributeName: aws.String(names[1]), KeyType: types.KeyTypeRange})
		}
		return out
	}
	_, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("ix"),
		AttributeDefinitions: []types.AttributeDefinition{attr("pk"), attr("shard"), attr("created"), attr("owner")},
		KeySchema:            keys("pk"),
		BillingMode:          types.BillingModePayPerRequest,
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{IndexName: aws.String("pending"), KeySchema: keys("shard", "created"), Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}},
			{IndexName: aws.String("by_owner"), KeySchema: keys("owner"), Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}},
		},
	})
	require.NoError(t, err)

	m.Enable(true)
	big := strings.Repeat("x", 1500)
	_, err = ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("ix"),
		Item: map[string]types.AttributeValue{"pk": s("a"), "shard": s("1"), "created": s("t"), "v": s(big)}})
	require.NoError(t, err)          // enters pending, all projected, 1.5 KB: 2; not in by_owner: 0
	set("SET v = :v", ":v", "small") // pending's projection changes: 1; by_owner: 0
	set("SET #o = :o", ":o", "o1")   // pending: 1; enters by_owner: 1
	set("SET #o = :o", ":o", "o2")   // pending: 1; by_owner's key changes: 2
	set("SET v = :v", ":v", "other") // pending: 1; by_owner holds keys only: 0
	_, err = ddb.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		"ix": {{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"pk": s("a"), "created": s("t"), "v": s("other"), "owner": s("o2")}}}},
	}})
	require.NoError(t, err) // leaves pending (no shard): 1; by_owner unchanged: 0
	_, err = ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("ix"),
		Item: map[string]types.AttributeValue{"pk": s("a"), "shard": s("9"), "created": s("t")}, ConditionExpression: aws.String("attribute_not_exists(pk)")})
	require.Error(t, err) // refused: no index write
	_, err = ddb.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("ix"), Item: map[string]types.AttributeValue{"pk": s("b"), "shard": s("1"), "created": s("t")}}}, // enters pending: 1
		{Delete: &types.Delete{TableName: aws.String("ix"), Key: key("a")}},                                                                     // leaves by_owner: 1
	}})
	require.NoError(t, err)

	got := map[string]billing.Line{}
	for _, l := range m.Snapshot() {
		got[l.Operation] = l
	}
	require.Equal(t, 2.0, got["PutItem"].IndexWriteUnits, "a put entering an index; a refused put")
	require.Equal(t, 7.0, got["UpdateItem"].IndexWriteUnits, "1 + 2 + 3 + 1")
	require.Equal(t, 1.0, got["BatchWriteItem"].IndexWriteUnits, "leaving an index")
	require.Equal(t, 2.0, got["TransactWriteItems"].IndexWriteUnits, "index writes of a transaction are not doubled")
	require.Equal(t, 3.0, got["PutItem"].WriteUnits, "the table's own units are unchanged: 2 + 1")
	require.Equal(t, 4.0, got["TransactWriteItems"].WriteUnits)
}

// TestStorageCountsItemsIndexEntriesAndWhatExpires: a table's stored bytes
// are its items' sizes plus 100 bytes each, its index entries' projections
// plus 100 bytes each, and the items carrying the time-to-live attribute are
// counted apart; the scan pages through more items than one Scan returns.
// Not parallel: it sets the page size.
func TestStorageCountsItemsIndexEntriesAndWhatExpires(t *testing.T) {
	m, ddb, _ := metered(t)
	ctx := context.Background()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	str := types.ScalarAttributeTypeS
	_, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String("stored"),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: str}, {AttributeName: aws.String("g"), AttributeType: str}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String("by-g"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
		BillingMode: types.BillingModePayPerRequest,
	})
	require.NoError(t, err)
	_, err = ddb.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("stored"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)}})
	require.NoError(t, err)

	// 1,200 items of "pk" + 4 characters and "v" + 10: 17 bytes each;
	// every third in the index ("g" + 1, its entry keys only: pk and g, 8
	// bytes); every fourth with a ttl ("ttl" + a number of 10 significant
	// digits: 3 + 6).
	const n = 1200
	var want billing.TableStorage
	want.Table = "stored"
	for i := 0; i < n; i++ {
		item := map[string]types.AttributeValue{"pk": s(fmt.Sprintf("%04d", i)), "v": s("0123456789")}
		size := int64(17)
		entry := int64(0)
		if i%3 == 0 {
			item["g"] = s("x")
			size += 2
			entry = 8 + billing.StorageOverhead
			want.IndexItems++
			want.IndexBytes += entry
		}
		if i%4 == 0 {
			item["ttl"] = &types.AttributeValueMemberN{Value: "1912345678"}
			size += 9
			want.ExpiringItems++
			want.ExpiringBytes += size + billing.StorageOverhead + entry
		}
		want.Items++
		want.Bytes += size + billing.StorageOverhead
		_, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("stored"), Item: item})
		require.NoError(t, err)
	}

	defer billing.SetScanPage(1000)() // two pages
	got, err := m.Storage(ctx)
	require.NoError(t, err)
	// kumo's servers in one process share their tables: the other tests'
	// are listed too.
	require.Contains(t, got, want)
}
