package ddbstream_test

import (
	"context"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/patience"
	"github.com/clubdev/club/localcloud/engine"
	"github.com/clubdev/club/localcloud/internal/ddbstream"
	"github.com/clubdev/club/localcloud/internal/front"
)

// startMoto starts a moto server for one test, behind the serialising
// front the local cloud puts before it.
func startMoto(t *testing.T) (*front.SerialEngine, string) {
	t.Helper()
	m, err := engine.StartMoto(context.Background(), engine.MotoOptions{})
	require.NoError(t, err, "the moto engine needs python3 with moto")
	t.Cleanup(func() { _ = m.Close() })
	target, err := url.Parse(m.URL())
	require.NoError(t, err)
	return front.Serialised(front.NewBufferedProxy(target)), m.URL()
}

func motoClients(endpoint string) (*dynamodb.Client, *dynamodbstreams.Client) {
	creds := credentials.NewStaticCredentialsProvider("test", "test", "")
	return dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), Credentials: creds}),
		dynamodbstreams.New(dynamodbstreams.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), Credentials: creds})
}

func createStreamTable(t *testing.T, db *dynamodb.Client, name string) string {
	t.Helper()
	out, err := db.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		StreamSpecification:  &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages},
	})
	require.NoError(t, err)
	return aws.ToString(out.TableDescription.LatestStreamArn)
}

func put(pk string) ddbtypes.TransactWriteItem {
	return ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{TableName: aws.String("outbox"), Item: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: pk}}}}
}

// cancelledTransaction writes a new item and fails a condition on an
// existing one, in one transaction: nothing may be written.
func cancelledTransaction(t *testing.T, db *dynamodb.Client) {
	t.Helper()
	failing := put("existing")
	failing.Put.ConditionExpression = aws.String("attribute_not_exists(pk)")
	_, err := db.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{
		TransactItems: []ddbtypes.TransactWriteItem{put("phantom"), failing},
	})
	var cancelled *ddbtypes.TransactionCanceledException
	require.ErrorAs(t, err, &cancelled)
}

// moto's difference, pinned: a cancelled transaction replaces the table's
// stream shard (moto rolls back by restoring a copy of the table), so an
// iterator taken before it reads a record of the cancelled write, and
// nothing written after it. On AWS a cancelled transaction writes no record
// and an iterator stays valid for 15 minutes. If this test fails, moto has
// changed: FollowEngine's fresh iterator per read is then no longer needed.
func TestMotoIteratorTakenBeforeACancelledTransactionIsStale(t *testing.T) {
	_, url := startMoto(t)
	db, streams := motoClients(url)
	ctx := context.Background()
	arn := createStreamTable(t, db, "outbox")
	_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("outbox"), Item: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "existing"}}})
	require.NoError(t, err)
	desc, err := streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	require.NoError(t, err)
	shard := desc.StreamDescription.Shards[0].ShardId
	it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: shard, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
	require.NoError(t, err)

	cancelledTransaction(t, db)
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("outbox"), Item: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "after"}}})
	require.NoError(t, err)

	got, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
	require.NoError(t, err)
	var keys []string
	for _, r := range got.Records {
		keys = append(keys, r.Dynamodb.Keys["pk"].(*streamtypes.AttributeValueMemberS).Value)
	}
	require.Equal(t, []string{"existing", "phantom"}, keys, "moto: the old iterator sees the cancelled write and not the later one")
}

// The local cloud's follower copies exactly the committed writes from
// moto's stream, cancelled transactions in between notwithstanding.
func TestFollowEngineCopiesOnlyCommittedWrites(t *testing.T) {
	serial, _ := startMoto(t)
	log := ddbstream.NewLog()
	rec := ddbstream.NewRecorder(log, serial, ddbstream.WithEngineRecords(serial.Exclusive))
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	db, _ := motoClients(srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rec.FollowEngine(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	createStreamTable(t, db, "outbox")
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("outbox")})
	require.NoError(t, err)
	ours := aws.ToString(desc.Table.LatestStreamArn) // the recorder names the stream as the template does
	write := func(pk string) {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("outbox"), Item: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: pk}}})
		require.NoError(t, err)
	}
	write("existing")
	waitForRecords(t, log, ours, 1) // the follower holds its place in the stream
	cancelledTransaction(t, db)
	write("after-1")
	cancelledTransaction(t, db)
	write("after-2")

	recs := waitForRecords(t, log, ours, 3)
	var keys []string
	for _, r := range recs {
		keys = append(keys, r.Event.Change.Keys["pk"].String())
		require.Equal(t, "INSERT", r.Event.EventName)
		require.NotEmpty(t, r.Event.EventID)
	}
	require.Equal(t, []string{"existing", "after-1", "after-2"}, keys, "every committed write once, no cancelled one")
	require.Equal(t, uint64(3), log.Latest(ours))
}

// waitForRecords waits until the log holds n records of the stream and
// returns them.
func waitForRecords(t *testing.T, log *ddbstream.Log, arn string, n int) []ddbstream.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience.Wait())
	defer cancel()
	var out []ddbstream.Record
	for len(out) < n {
		recs, err := log.Read(ctx, arn, uint64(len(out)), n-len(out))
		require.NoError(t, err, "waiting for %d records, have %d", n, len(out))
		out = append(out, recs...)
	}
	return out
}
