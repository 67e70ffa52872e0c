package ddbstream_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/internal/ddbstream"
)

// emulatorCalls counts the operations the recorder sends to the emulator.
type emulatorCalls struct {
	mu   sync.Mutex
	next http.Handler
	ops  map[string]int
}

func (c *emulatorCalls) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.ops[strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")]++
	c.mu.Unlock()
	c.next.ServeHTTP(w, r)
}

func (c *emulatorCalls) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = map[string]int{}
	return ops
}

// A Put conditional on attribute_not_exists of a key attribute creates the
// item or does nothing, so its images are known without reading them: the
// outbox insert of every enrollment costs the emulator one call, not three.
func TestConditionalCreatesAreRecordedWithoutReadingImages(t *testing.T) {
	t.Parallel()
	log := ddbstream.NewLog()
	proxy := httputil.NewSingleHostReverseProxy(kumoURL)
	calls := &emulatorCalls{next: proxy, ops: map[string]int{}}
	rec := ddbstream.NewRecorder(log, calls)
	api := ddbstream.NewAPI(log)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("X-Amz-Target"), "DynamoDBStreams_20120810.") {
			api.ServeHTTP(w, r)
			return
		}
		rec.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg := sdkConfig(srv.URL, &logBuffer{})
	e := &env{log: log, url: srv.URL, ddb: dynamodb.NewFromConfig(cfg), streams: dynamodbstreams.NewFromConfig(cfg), recorder: rec}
	table, arn := e.createTable(t, "NEW_IMAGE", true)
	c := ctx(t)
	other := tableName(t)
	_, err := e.ddb.CreateTable(c, &dynamodb.CreateTableInput{
		TableName: &other, BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
	})
	require.NoError(t, err)
	calls.reset()

	created := item{"pk": s("a"), "sk": n("1"), "v": s("first")}
	_, err = e.ddb.PutItem(c, &dynamodb.PutItemInput{TableName: &table, Item: created, ConditionExpression: aws.String("attribute_not_exists(pk)")})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"PutItem": 1}, calls.reset(), "no image read")

	inTx := item{"pk": s("b"), "sk": n("1"), "v": s("second")}
	_, err = e.ddb.TransactWriteItems(c, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: &other, Item: item{"pk": s("x")}}}, // no stream: never read
		{Put: &ddbtypes.Put{TableName: &table, Item: inTx, ConditionExpression: aws.String(" attribute_not_exists( sk ) ")}},
	}})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"TransactWriteItems": 1}, calls.reset())

	// The same create again fails its condition: nothing is recorded.
	_, err = e.ddb.PutItem(c, &dynamodb.PutItemInput{TableName: &table, Item: item{"pk": s("a"), "sk": n("1"), "v": s("again")},
		ConditionExpression: aws.String("attribute_not_exists(pk)")})
	require.Error(t, err)
	// Any other condition is read around, as before.
	_, err = e.ddb.PutItem(c, &dynamodb.PutItemInput{TableName: &table, Item: item{"pk": s("a"), "sk": n("1"), "v": s("replaced")},
		ConditionExpression: aws.String("attribute_exists(pk)")})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"PutItem": 2, "GetItem": 2}, calls.reset())

	requireRecords(t, "NEW_IMAGE", []wantRecord{
		{event: streamtypes.OperationTypeInsert, keys: item{"pk": s("a"), "sk": n("1")}, newImage: created},
		{event: streamtypes.OperationTypeInsert, keys: item{"pk": s("b"), "sk": n("1")}, newImage: inTx},
		{event: streamtypes.OperationTypeModify, keys: item{"pk": s("a"), "sk": n("1")}, newImage: item{"pk": s("a"), "sk": n("1"), "v": s("replaced")}},
	}, e.readStream(t, arn, streamtypes.ShardIteratorTypeTrimHorizon, ""))
}
