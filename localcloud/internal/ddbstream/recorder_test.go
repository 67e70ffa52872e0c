package ddbstream_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/internal/ddbstream"
)

type item = map[string]ddbtypes.AttributeValue

// wantRecord is what a test expects of one stream record.
type wantRecord struct {
	event    streamtypes.OperationType
	keys     item
	oldImage item
	newImage item
}

// viewed drops the images the view type does not carry.
func (w wantRecord) viewed(view string) wantRecord {
	if view != "OLD_IMAGE" && view != "NEW_AND_OLD_IMAGES" {
		w.oldImage = nil
	}
	if view != "NEW_IMAGE" && view != "NEW_AND_OLD_IMAGES" {
		w.newImage = nil
	}
	return w
}

func requireRecords(t *testing.T, view string, want []wantRecord, got []streamtypes.Record) {
	t.Helper()
	require.Len(t, got, len(want))
	for i, w := range want {
		w = w.viewed(view)
		g := got[i]
		assert.Equal(t, w.event, g.EventName, "record %d event", i)
		assert.Equal(t, w.keys, fromStreamItem(g.Dynamodb.Keys), "record %d keys", i)
		assert.Equal(t, w.oldImage, fromStreamItem(g.Dynamodb.OldImage), "record %d old image", i)
		assert.Equal(t, w.newImage, fromStreamItem(g.Dynamodb.NewImage), "record %d new image", i)
		assert.Equal(t, streamtypes.StreamViewType(view), g.Dynamodb.StreamViewType, "record %d view type", i)
	}
}

func TestItemWritesRecordImagesPerViewType(t *testing.T) {
	t.Parallel()
	for _, view := range []string{"KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"} {
		t.Run(view, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			table, arn := e.createTable(t, view, false)
			start := time.Now()
			c := ctx(t)
			key := item{"pk": s("a")}
			v1 := item{"pk": s("a"), "v": n("1")}
			v2 := item{"pk": s("a"), "v": n("2")}

			_, err := e.ddb.PutItem(c, &dynamodb.PutItemInput{TableName: &table, Item: v1})
			require.NoError(t, err)
			_, err = e.ddb.PutItem(c, &dynamodb.PutItemInput{TableName: &table, Item: v1})
			require.NoError(t, err, "identical put: no change, no record")
			_, err = e.ddb.UpdateItem(c, &dynamodb.UpdateItemInput{TableName: &table, Key: key,
				UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: item{":v": n("2")}})
			require.NoError(t, err)
			_, err = e.ddb.UpdateItem(c, &dynamodb.UpdateItemInput{TableName: &table, Key: key,
				UpdateExpression: aws.String("SET v = :v"), ConditionExpression: aws.String("v = :old"),
				ExpressionAttributeValues: item{":v": n("3"), ":old": n("99")}})
			var ccf *ddbtypes.ConditionalCheckFailedException
			require.ErrorAs(t, err, &ccf)
			_, err = e.ddb.PutItem(c, &dynamodb.PutItemInput{TableName: &table, Item: item{"pk": s("a"), "v": n("7")},
				ConditionExpression: aws.String("attribute_not_exists(pk)")})
			require.ErrorAs(t, err, &ccf)
			_, err = e.ddb.DeleteItem(c, &dynamodb.DeleteItemInput{TableName: &table, Key: key,
				ConditionExpression: aws.String("v = :old"), ExpressionAttributeValues: item{":old": n("99")}})
			require.ErrorAs(t, err, &ccf)
			_, err = e.ddb.DeleteItem(c, &dynamodb.DeleteItemInput{TableName: &table, Key: key})
			require.NoError(t, err)
			_, err = e.ddb.DeleteItem(c, &dynamodb.DeleteItemInput{TableName: &table, Key: key})
			require.NoError(t, err, "deleting a missing item: no record")

			got := e.readStream(t, arn, streamtypes.ShardIteratorTypeTrimHorizon, "")
			requireRecords(t, view, []wantRecord{
				{event: streamtypes.OperationTypeInsert, keys: key, newImage: v1},
				{event: streamtypes.OperationTypeModify, keys: key, oldImage: v1, newImage: v2},
				{event: streamtypes.OperationTypeRemove, keys: key, oldImage: v2},
			}, got)

			ids := map[string]bool{}
			for i, r := range got {
				assert.Equal(t, "aws:dynamodb", aws.ToString(r.EventSource))
				assert.Equal(t, "1.1", aws.ToString(r.EventVersion))
				assert.Equal(t, "us-east-1", aws.ToString(r.AwsRegion))
				assert.Equal(t, ddbstream.SequenceString(uint64(i+1)), aws.ToString(r.Dynamodb.SequenceNumber))
				assert.Positive(t, aws.ToInt64(r.Dynamodb.SizeBytes))
				created := aws.ToTime(r.Dynamodb.ApproximateCreationDateTime)
				assert.Equal(t, created.Truncate(time.Second), created, "rounded down to the second")
				assert.False(t, created.Before(start.Truncate(time.Second)) || created.After(time.Now()))
				ids[aws.ToString(r.EventID)] = true
			}
			assert.Len(t, ids, len(got), "event IDs are unique")
		})
	}
}

func TestTransactWriteItemsRecordsEachItemInRequestOrder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	tableA, arnA := e.createTable(t, "NEW_AND_OLD_IMAGES", true)
	tableB, arnB := e.createTable(t, "OLD_IMAGE", false)
	c := ctx(t)

	old := item{"pk": s("x"), "sk": n("2"), "v": s("old")}
	counter := item{"pk": s("y"), "n": n("1")}
	_, err := e.ddb.PutItem(c, &dynamodb.PutItemInput{TableName: &tableA, Item: old})
	require.NoError(t, err)
	_, err = e.ddb.PutItem(c, &dynamodb.PutItemInput{TableName: &tableB, Item: counter})
	require.NoError(t, err)

	inserted := item{"pk": s("x"), "sk": n("1"), "v": s("new")}
	_, err = e.ddb.TransactWriteItems(c, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
		{Put: &ddbtypes.Put{TableName: &tableA, Item: inserted, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{ConditionCheck: &ddbtypes.ConditionCheck{TableName: &tableB, Key: item{"pk": s("y")},
			ConditionExpression: aws.String("attribute_exists(pk)")}},
		{Update: &ddbtypes.Update{TableName: &tableB, Key: item{"pk": s("y")},
			UpdateExpression: aws.String("SET n = n + :one"), ExpressionAttributeValues: item{":one": n("1")}}},
		{Delete: &ddbtypes.Delete{TableName: &tableA, Key: item{"pk": s("x"), "sk": n("2")}}},
	}})
	require.NoError(t, err)

	requireRecords(t, "NEW_AND_OLD_IMAGES", []wantRecord{
		{event: streamtypes.OperationTypeInsert, keys: item{"pk": s("x"), "sk": n("2")}, newImage: old},
		{event: streamtypes.OperationTypeInsert, keys: item{"pk": s("x"), "sk": n("1")}, newImage: inserted},
		{event: streamtypes.OperationTypeRemove, keys: item{"pk": s("x"), "sk": n("2")}, oldImage: old},
	}, e.readStream(t, arnA, streamtypes.ShardIteratorTypeTrimHorizon, ""))
	requireRecords(t, "OLD_IMAGE", []wantRecord{
		{event: streamtypes.OperationTypeInsert, keys: item{"pk": s("y")}},
		{event: streamtypes.OperationTypeModify, keys: item{"pk": s("y")}, oldImage: counter},
	}, e.readStream(t, arnB, streamtypes.ShardIteratorTypeTrimHorizon, ""))

	t.Run("cancelled transaction records nothing", func(t *testing.T) {
		latestA, latestB := e.log.Latest(arnA), e.log.Latest(arnB)
		_, err := e.ddb.TransactWriteItems(c, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
			{Put: &ddbtypes.Put{TableName: &tableA, Item: item{"pk": s("x"), "sk": n("3")}}},
			{Update: &ddbtypes.Update{TableName: &tableB, Key: item{"pk": s("y")},
				UpdateExpression: aws.String("SET n = :v"), ConditionExpression: aws.String("n = :expected"),
				ExpressionAttributeValues: item{":v": n("100"), ":expected": n("100")}}},
		}})
		var cancelled *ddbtypes.TransactionCanceledException
		require.ErrorAs(t, err, &cancelled)
		codes := make([]string, len(cancelled.CancellationReasons))
		for i, r := range cancelled.CancellationReasons {
			codes[i] = aws.ToString(r.Code)
		}
		assert.Equal(t, []string{"None", "ConditionalCheckFailed"}, codes)
		assert.Equal(t, latestA, e.log.Latest(arnA))
		assert.Equal(t, latestB, e.log.Latest(arnB))
	})
}

// A transaction's records are adjacent and in request order even while other
// writers hammer the same table.
func TestTransactionRecordsStayAdjacentUnderConcurrency(t *testing.T) {
	t.Parallel()
	e := setup(t)
	table, arn := e.createTable(t, "NEW_IMAGE", false)
	c := ctx(t)
	const writers, txPerWriter, itemsPerTx, putters, putsPerPutter = 4, 10, 3, 4, 30

	var wg sync.WaitGroup
	errs := make(chan error, writers+putters)
	for g := range writers {
		wg.Go(func() {
			for i := range txPerWriter {
				tx := fmt.Sprintf("tx-%d-%d", g, i)
				items := make([]ddbtypes.TransactWriteItem, itemsPerTx)
				for j := range items {
					items[j] = ddbtypes.TransactWriteItem{Put: &ddbtypes.Put{TableName: &table,
						Item: item{"pk": s(fmt.Sprintf("%s-%d", tx, j)), "tx": s(tx), "idx": n(strconv.Itoa(j))}}}
				}
				if _, err := e.ddb.TransactWriteItems(c, &dynamodb.TransactWriteItemsInput{TransactItems: items}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for p := range putters {
		wg.Go(func() {
			for i := range putsPerPutter {
				_, err := e.ddb.PutItem(c, &dynamodb.PutItemInput{TableName: &table,
					Item: item{"pk": s(fmt.Sprintf("solo-%d-%d", p, i))}})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	recs, err := e.log.Since(arn, 0, 10_000)
	require.NoError(t, err)
	require.Len(t, recs, writers*txPerWriter*itemsPerTx+putters*putsPerPutter)
	firstSeq := map[string]uint64{}
	for _, r := range recs {
		tx, ok := r.Event.Change.NewImage["tx"]
		if !ok {
			continue
		}
		idx, err := r.Event.Change.NewImage["idx"].Integer()
		require.NoError(t, err)
		if idx == 0 {
			firstSeq[tx.String()] = r.Seq
			continue
		}
		first, ok := firstSeq[tx.String()]
		require.True(t, ok, "item %d of %s came before its item 0", idx, tx.String())
		assert.Equal(t, first+uint64(idx), r.Seq, "item %d of %s is not adjacent", idx, tx.String())
	}
	assert.Len(t, firstSeq, writers*txPerWriter)
}

func TestBatchWriteItemRecordsInRequestOrder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	tableA, arnA := e.createTable(t, "NEW_AND_OLD_IMAGES", false)
	tableB, arnB := e.createTable(t, "KEYS_ONLY", false)
	tableC, _ := e.createTable(t, "", false) // no stream: passes through
	c := ctx(t)
	a2 := item{"pk": s("a2"), "v": s("old")}
	_, err := e.ddb.PutItem(c, &dynamodb.PutItemInput{TableName: &tableA, Item: a2})
	require.NoError(t, err)

	a1 := item{"pk": s("a1"), "v": s("one")}
	a3 := item{"pk": s("a3"), "v": s("three")}
	_, err = e.ddb.BatchWriteItem(c, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{
		tableA: {
			{PutRequest: &ddbtypes.PutRequest{Item: a1}},
			{DeleteRequest: &ddbtypes.DeleteRequest{Key: item{"pk": s("a2")}}},
			{PutRequest: &ddbtypes.PutRequest{Item: a3}},
		},
		tableB: {{PutRequest: &ddbtypes.PutRequest{Item: item{"pk": s("b1"), "v": s("x")}}}},
		tableC: {{PutRequest: &ddbtypes.PutRequest{Item: item{"pk": s("c1")}}}},
	}})
	require.NoError(t, err)

	requireRecords(t, "NEW_AND_OLD_IMAGES", []wantRecord{
		{event: streamtypes.OperationTypeInsert, keys: item{"pk": s("a2")}, newImage: a2},
		{event: streamtypes.OperationTypeInsert, keys: item{"pk": s("a1")}, newImage: a1},
		{event: streamtypes.OperationTypeRemove, keys: item{"pk": s("a2")}, oldImage: a2},
		{event: streamtypes.OperationTypeInsert, keys: item{"pk": s("a3")}, newImage: a3},
	}, e.readStream(t, arnA, streamtypes.ShardIteratorTypeTrimHorizon, ""))
	requireRecords(t, "KEYS_ONLY", []wantRecord{
		{event: streamtypes.OperationTypeInsert, keys: item{"pk": s("b1")}},
	}, e.readStream(t, arnB, streamtypes.ShardIteratorTypeTrimHorizon, ""))

	got, err := e.ddb.GetItem(c, &dynamodb.GetItemInput{TableName: &tableC, Key: item{"pk": s("c1")}})
	require.NoError(t, err)
	assert.NotEmpty(t, got.Item, "the write to the table without a stream was applied")
}

// N writers race conditional increments of one counter; the stream holds
// exactly one MODIFY per successful write, in commit order.
func TestConcurrentConditionalIncrementsRecordCommitOrder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	table, arn := e.createTable(t, "NEW_IMAGE", false)
	c := ctx(t)
	key := item{"pk": s("counter")}
	_, err := e.ddb.PutItem(c, &dynamodb.PutItemInput{TableName: &table, Item: item{"pk": s("counter"), "n": n("0")}})
	require.NoError(t, err)

	const writers = 32
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			for {
				got, err := e.ddb.GetItem(c, &dynamodb.GetItemInput{TableName: &table, Key: key, ConsistentRead: aws.Bool(true)})
				if err != nil {
					errs <- err
					return
				}
				cur := got.Item["n"].(*ddbtypes.AttributeValueMemberN).Value
				_, err = e.ddb.UpdateItem(c, &dynamodb.UpdateItemInput{TableName: &table, Key: key,
					UpdateExpression: aws.String("SET n = n + :one"), ConditionExpression: aws.String("n = :cur"),
					ExpressionAttributeValues: item{":one": n("1"), ":cur": n(cur)}})
				var ccf *ddbtypes.ConditionalCheckFailedException
				if errors.As(err, &ccf) {
					continue // lost the race: read again
				}
				if err != nil {
					errs <- err
				}
				return
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	recs := e.readStream(t, arn, streamtypes.ShardIteratorTypeTrimHorizon, "")
	require.Len(t, recs, 1+writers, "one INSERT, then one MODIFY per writer")
	for i, r := range recs[1:] {
		require.Equal(t, streamtypes.OperationTypeModify, r.EventName)
		assert.Equal(t, n(strconv.Itoa(i+1)), fromStream(r.Dynamodb.NewImage["n"]), "record %d", i+1)
	}
}

func TestClientRequestTokenMakesTransactionsIdempotent(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	e := setup(t, ddbstream.WithClock(clock.Now))
	table, arn := e.createTable(t, "NEW_IMAGE", false)
	c := ctx(t)
	key := item{"pk": s("k")}
	increment := func(token string, by string) error {
		_, err := e.ddb.TransactWriteItems(c, &dynamodb.TransactWriteItemsInput{
			ClientRequestToken: aws.String(token),
			TransactItems: []ddbtypes.TransactWriteItem{{Update: &ddbtypes.Update{TableName: &table, Key: key,
				UpdateExpression:          aws.String("ADD n :by SET #a = :a, #b = :b"),
				ExpressionAttributeNames:  map[string]string{"#a": "a", "#b": "b"},
				ExpressionAttributeValues: item{":by": n(by), ":a": s("x"), ":b": s("y")}}}},
		})
		return err
	}
	counter := func() string {
		got, err := e.ddb.GetItem(c, &dynamodb.GetItemInput{TableName: &table, Key: key, ConsistentRead: aws.Bool(true)})
		require.NoError(t, err)
		return got.Item["n"].(*ddbtypes.AttributeValueMemberN).Value
	}

	require.NoError(t, increment("token-1", "1"))
	// The SDK serialises maps in random order: the replays differ byte for
	// byte but are the same request.
	for range 5 {
		require.NoError(t, increment("token-1", "1"), "a replay succeeds")
	}
	assert.Equal(t, "1", counter(), "a replay does not apply again")
	assert.Equal(t, uint64(1), e.log.Latest(arn), "a replay records nothing")

	var mismatch *ddbtypes.IdempotentParameterMismatchException
	require.ErrorAs(t, increment("token-1", "5"), &mismatch)
	assert.Equal(t, "1", counter())

	require.NoError(t, increment("token-2", "1"))
	assert.Equal(t, "2", counter(), "another token applies")

	clock.Advance(11 * time.Minute)
	require.NoError(t, increment("token-1", "1"))
	assert.Equal(t, "3", counter(), "after 10 minutes the token is forgotten")
	assert.Equal(t, uint64(3), e.log.Latest(arn))
}

func TestTableDescriptionsNameTheLocalStream(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := ctx(t)
	table, arn := e.createTable(t, "NEW_AND_OLD_IMAGES", false)

	desc, err := e.ddb.DescribeTable(c, &dynamodb.DescribeTableInput{TableName: &table})
	require.NoError(t, err)
	assert.Equal(t, ddbstream.StreamARN(aws.ToString(desc.Table.TableArn)), arn)
	assert.Equal(t, arn, aws.ToString(desc.Table.LatestStreamArn))
	assert.Equal(t, "2026-01-01T00:00:00.000", aws.ToString(desc.Table.LatestStreamLabel))
	require.NotNil(t, desc.Table.StreamSpecification)
	assert.True(t, aws.ToBool(desc.Table.StreamSpecification.StreamEnabled))
	assert.Equal(t, ddbtypes.StreamViewTypeNewAndOldImages, desc.Table.StreamSpecification.StreamViewType)

	plain, plainARN := e.createTable(t, "", false)
	assert.Empty(t, plainARN)
	desc, err = e.ddb.DescribeTable(c, &dynamodb.DescribeTableInput{TableName: &plain})
	require.NoError(t, err)
	assert.Nil(t, desc.Table.StreamSpecification)
	assert.Nil(t, desc.Table.LatestStreamArn)
}

func TestUpdateTableEnablesAndDisablesTheStream(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := ctx(t)
	table, _ := e.createTable(t, "", false)
	put := func(pk string) {
		_, err := e.ddb.PutItem(c, &dynamodb.PutItemInput{TableName: &table, Item: item{"pk": s(pk)}})
		require.NoError(t, err)
	}
	put("before")

	out, err := e.ddb.UpdateTable(c, &dynamodb.UpdateTableInput{TableName: &table,
		StreamSpecification: &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeKeysOnly}})
	require.NoError(t, err)
	arn := aws.ToString(out.TableDescription.LatestStreamArn)
	require.Equal(t, ddbstream.StreamARN(aws.ToString(out.TableDescription.TableArn)), arn)

	put("during")
	requireRecords(t, "KEYS_ONLY", []wantRecord{{event: streamtypes.OperationTypeInsert, keys: item{"pk": s("during")}}},
		e.readStream(t, arn, streamtypes.ShardIteratorTypeTrimHorizon, ""))

	_, err = e.ddb.UpdateTable(c, &dynamodb.UpdateTableInput{TableName: &table,
		StreamSpecification: &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewImage}})
	require.ErrorContains(t, err, "ValidationException", "a table has one enabled stream")

	_, err = e.ddb.UpdateTable(c, &dynamodb.UpdateTableInput{TableName: &table,
		StreamSpecification: &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(false)}})
	require.NoError(t, err)
	put("after")
	assert.Equal(t, uint64(1), e.log.Latest(arn), "a disabled stream gets no records")
	stream, err := e.streams.DescribeStream(c, streamDescribe(arn))
	require.NoError(t, err)
	assert.Equal(t, streamtypes.StreamStatusDisabled, stream.StreamDescription.StreamStatus)
	desc, err := e.ddb.DescribeTable(c, &dynamodb.DescribeTableInput{TableName: &table})
	require.NoError(t, err)
	assert.Nil(t, desc.Table.StreamSpecification)
	assert.Equal(t, arn, aws.ToString(desc.Table.LatestStreamArn), "AWS keeps naming the latest stream")
}

// A recorder that has never seen a table learns its stream from kumo, as
// after a restart of the local cloud over kumo's data directory.
func TestRecorderDiscoversStreamsOfTablesItDidNotCreate(t *testing.T) {
	t.Parallel()
	creator := setup(t)
	table, arn := creator.createTable(t, "NEW_IMAGE", false)

	fresh := setup(t)
	_, err := fresh.ddb.PutItem(ctx(t), &dynamodb.PutItemInput{TableName: &table, Item: item{"pk": s("p")}})
	require.NoError(t, err)
	requireRecords(t, "NEW_IMAGE", []wantRecord{
		{event: streamtypes.OperationTypeInsert, keys: item{"pk": s("p")}, newImage: item{"pk": s("p")}},
	}, fresh.readStream(t, arn, streamtypes.ShardIteratorTypeTrimHorizon, ""))
}

// The SDK validates X-Amz-Crc32 on every DynamoDB answer and warns when it
// does not match; through the recorder it always matches.
func TestResponsesCarryAMatchingCRC32(t *testing.T) {
	t.Parallel()
	calls := func(t *testing.T, client *dynamodb.Client, table string) {
		c := ctx(t)
		_, err := client.PutItem(c, &dynamodb.PutItemInput{TableName: &table, Item: item{"pk": s("a")}})
		require.NoError(t, err)
		_, err = client.GetItem(c, &dynamodb.GetItemInput{TableName: &table, Key: item{"pk": s("a")}})
		require.NoError(t, err)
		_, err = client.DescribeTable(c, &dynamodb.DescribeTableInput{TableName: &table})
		require.NoError(t, err)
		_, err = client.PutItem(c, &dynamodb.PutItemInput{TableName: &table, Item: item{"pk": s("a")},
			ConditionExpression: aws.String("attribute_not_exists(pk)")})
		require.Error(t, err)
	}

	e := setup(t)
	table, _ := e.createTable(t, "NEW_IMAGE", false)
	calls(t, e.ddb, table)
	assert.NotContains(t, e.sdkLog.String(), "checksum")

	// Control: straight to kumo, the same calls make the SDK warn.
	direct := &logBuffer{}
	calls(t, dynamodb.NewFromConfig(sdkConfig(kumoURL.String(), direct)), table)
	assert.Contains(t, direct.String(), "checksum")
}
