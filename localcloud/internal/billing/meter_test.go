package billing_test

import (
	"context"
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

// TestMeterBillsRealRequestsPerItem sends requests through the meter to the
// emulator and checks each operation's billed units.
func TestMeterBillsRealRequestsPerItem(t *testing.T) {
	srv := kumo.NewServer()
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	engine := httputil.NewSingleHostReverseProxy(u)
	m := billing.New(engine)
	front := httptest.NewServer(m.Wrap(engine))
	t.Cleanup(front.Close)

	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("k", "s", "")}
	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(front.URL) })
	q := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(front.URL) })
	ctx := context.Background()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	key := func(pk string) map[string]types.AttributeValue { return map[string]types.AttributeValue{"pk": s(pk)} }

	_, err = ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
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
