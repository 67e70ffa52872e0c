package ddbstream_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/internal/ddbstream"
)

func streamDescribe(arn string) *dynamodbstreams.DescribeStreamInput {
	return &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)}
}

// putN writes items pk=p1..pN and returns nothing; each is one INSERT.
func (e *env) putN(t *testing.T, table string, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		_, err := e.ddb.PutItem(ctx(t), &dynamodb.PutItemInput{TableName: &table, Item: item{"pk": s(fmt.Sprintf("p%d", i))}})
		require.NoError(t, err)
	}
}

func pks(recs []streamtypes.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Dynamodb.Keys["pk"].(*streamtypes.AttributeValueMemberS).Value
	}
	return out
}

func TestShardIteratorPositions(t *testing.T) {
	t.Parallel()
	e := setup(t)
	table, arn := e.createTable(t, "KEYS_ONLY", false)
	e.putN(t, table, 1, 5)
	seq3 := ddbstream.SequenceString(3)

	tests := []struct {
		name string
		typ  streamtypes.ShardIteratorType
		seq  string
		want []string
	}{
		{"trim horizon", streamtypes.ShardIteratorTypeTrimHorizon, "", []string{"p1", "p2", "p3", "p4", "p5"}},
		{"at sequence number", streamtypes.ShardIteratorTypeAtSequenceNumber, seq3, []string{"p3", "p4", "p5"}},
		{"after sequence number", streamtypes.ShardIteratorTypeAfterSequenceNumber, seq3, []string{"p4", "p5"}},
		{"at the first", streamtypes.ShardIteratorTypeAtSequenceNumber, ddbstream.SequenceString(1), []string{"p1", "p2", "p3", "p4", "p5"}},
		{"after the last", streamtypes.ShardIteratorTypeAfterSequenceNumber, ddbstream.SequenceString(5), []string{}},
		{"latest", streamtypes.ShardIteratorTypeLatest, "", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, pks(e.readStream(t, arn, tt.typ, tt.seq)))
		})
	}

	t.Run("latest sees what comes next", func(t *testing.T) {
		it, err := e.streams.GetShardIterator(ctx(t), &dynamodbstreams.GetShardIteratorInput{StreamArn: &arn,
			ShardId: aws.String(ddbstream.ShardID), ShardIteratorType: streamtypes.ShardIteratorTypeLatest})
		require.NoError(t, err)
		out, err := e.streams.GetRecords(ctx(t), &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
		require.NoError(t, err)
		require.Empty(t, out.Records)
		require.NotNil(t, out.NextShardIterator, "an open shard always has a next iterator")

		e.putN(t, table, 6, 6)
		assert.Equal(t, []string{"p6"}, pks(e.readFrom(t, out.NextShardIterator)))
	})

	t.Run("limit pages through the stream", func(t *testing.T) {
		it, err := e.streams.GetShardIterator(ctx(t), &dynamodbstreams.GetShardIteratorInput{StreamArn: &arn,
			ShardId: aws.String(ddbstream.ShardID), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
		require.NoError(t, err)
		iterator := it.ShardIterator
		var pages [][]string
		for range 4 {
			out, err := e.streams.GetRecords(ctx(t), &dynamodbstreams.GetRecordsInput{ShardIterator: iterator, Limit: aws.Int32(2)})
			require.NoError(t, err)
			pages = append(pages, pks(out.Records))
			iterator = out.NextShardIterator
		}
		assert.Equal(t, [][]string{{"p1", "p2"}, {"p3", "p4"}, {"p5", "p6"}, {}}, pages)
	})
}

func TestStreamsAPIErrors(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	e := setup(t, ddbstream.WithClock(clock.Now))
	table, arn := e.createTable(t, "KEYS_ONLY", false)
	e.putN(t, table, 1, 2)
	c := ctx(t)
	unknown := arn + "-missing"
	trimHorizon := func(arn, shard string) (*dynamodbstreams.GetShardIteratorOutput, error) {
		return e.streams.GetShardIterator(c, &dynamodbstreams.GetShardIteratorInput{StreamArn: &arn,
			ShardId: &shard, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
	}
	atSeq := func(seq string) error {
		_, err := e.streams.GetShardIterator(c, &dynamodbstreams.GetShardIteratorInput{StreamArn: &arn,
			ShardId: aws.String(ddbstream.ShardID), ShardIteratorType: streamtypes.ShardIteratorTypeAtSequenceNumber,
			SequenceNumber: &seq})
		return err
	}
	getRecords := func(it string) error {
		_, err := e.streams.GetRecords(c, &dynamodbstreams.GetRecordsInput{ShardIterator: &it})
		return err
	}
	valid, err := trimHorizon(arn, ddbstream.ShardID)
	require.NoError(t, err)

	tests := []struct {
		name string
		call func() error
		code string
	}{
		{"describe unknown stream", func() error { _, err := e.streams.DescribeStream(c, streamDescribe(unknown)); return err }, "ResourceNotFoundException"},
		{"iterator of unknown stream", func() error { _, err := trimHorizon(unknown, ddbstream.ShardID); return err }, "ResourceNotFoundException"},
		{"iterator of unknown shard", func() error { _, err := trimHorizon(arn, "shardId-0"); return err }, "ResourceNotFoundException"},
		{"sequence number past the end", func() error { return atSeq(ddbstream.SequenceString(3)) }, "ValidationException"},
		{"sequence number zero", func() error { return atSeq(ddbstream.SequenceString(0)) }, "ValidationException"},
		{"sequence number not a number", func() error { return atSeq("abc") }, "ValidationException"},
		{"garbage iterator", func() error { return getRecords("not-an-iterator") }, "ValidationException"},
		{"truncated iterator", func() error { return getRecords(aws.ToString(valid.ShardIterator)[:30]) }, "ValidationException"},
		{"limit too large", func() error {
			_, err := e.streams.GetRecords(c, &dynamodbstreams.GetRecordsInput{ShardIterator: valid.ShardIterator, Limit: aws.Int32(1001)})
			return err
		}, "ValidationException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var apiErr smithy.APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, tt.code, apiErr.ErrorCode())
		})
	}

	t.Run("typed errors", func(t *testing.T) {
		_, err := e.streams.DescribeStream(c, streamDescribe(unknown))
		var notFound *streamtypes.ResourceNotFoundException
		require.ErrorAs(t, err, &notFound)
	})

	t.Run("iterators expire after 15 minutes", func(t *testing.T) {
		fresh, err := trimHorizon(arn, ddbstream.ShardID)
		require.NoError(t, err)
		clock.Advance(14 * time.Minute)
		out, err := e.streams.GetRecords(c, &dynamodbstreams.GetRecordsInput{ShardIterator: fresh.ShardIterator})
		require.NoError(t, err)
		require.Len(t, out.Records, 2)

		clock.Advance(2 * time.Minute)
		_, err = e.streams.GetRecords(c, &dynamodbstreams.GetRecordsInput{ShardIterator: fresh.ShardIterator})
		var expired *streamtypes.ExpiredIteratorException
		require.ErrorAs(t, err, &expired)
		// The iterator GetRecords returned is fresh.
		_, err = e.streams.GetRecords(c, &dynamodbstreams.GetRecordsInput{ShardIterator: out.NextShardIterator})
		require.NoError(t, err)
	})
}

func TestListAndDescribeStreams(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := ctx(t)
	tableA, arnA := e.createTable(t, "NEW_AND_OLD_IMAGES", true)
	_, arnB := e.createTable(t, "KEYS_ONLY", false)
	e.createTable(t, "", false)

	all, err := e.streams.ListStreams(c, &dynamodbstreams.ListStreamsInput{})
	require.NoError(t, err)
	var listed []string
	for _, st := range all.Streams {
		listed = append(listed, aws.ToString(st.StreamArn))
	}
	assert.ElementsMatch(t, []string{arnA, arnB}, listed)

	one, err := e.streams.ListStreams(c, &dynamodbstreams.ListStreamsInput{TableName: &tableA})
	require.NoError(t, err)
	require.Len(t, one.Streams, 1)
	assert.Equal(t, arnA, aws.ToString(one.Streams[0].StreamArn))
	assert.Equal(t, tableA, aws.ToString(one.Streams[0].TableName))
	assert.Equal(t, "2026-01-01T00:00:00.000", aws.ToString(one.Streams[0].StreamLabel))

	page, err := e.streams.ListStreams(c, &dynamodbstreams.ListStreamsInput{Limit: aws.Int32(1)})
	require.NoError(t, err)
	require.Len(t, page.Streams, 1)
	require.NotNil(t, page.LastEvaluatedStreamArn)
	rest, err := e.streams.ListStreams(c, &dynamodbstreams.ListStreamsInput{ExclusiveStartStreamArn: page.LastEvaluatedStreamArn})
	require.NoError(t, err)
	require.Len(t, rest.Streams, 1)
	assert.NotEqual(t, page.Streams[0].StreamArn, rest.Streams[0].StreamArn)

	desc, err := e.streams.DescribeStream(c, streamDescribe(arnA))
	require.NoError(t, err)
	d := desc.StreamDescription
	assert.Equal(t, arnA, aws.ToString(d.StreamArn))
	assert.Equal(t, tableA, aws.ToString(d.TableName))
	assert.Equal(t, streamtypes.StreamStatusEnabled, d.StreamStatus)
	assert.Equal(t, streamtypes.StreamViewTypeNewAndOldImages, d.StreamViewType)
	assert.Equal(t, "2026-01-01T00:00:00.000", aws.ToString(d.StreamLabel))
	assert.WithinDuration(t, time.Now(), aws.ToTime(d.CreationRequestDateTime), time.Minute)
	assert.Equal(t, []streamtypes.KeySchemaElement{
		{AttributeName: aws.String("pk"), KeyType: streamtypes.KeyTypeHash},
		{AttributeName: aws.String("sk"), KeyType: streamtypes.KeyTypeRange},
	}, d.KeySchema)
	require.Len(t, d.Shards, 1)
	assert.Equal(t, ddbstream.ShardID, aws.ToString(d.Shards[0].ShardId))
	assert.Equal(t, ddbstream.SequenceString(1), aws.ToString(d.Shards[0].SequenceNumberRange.StartingSequenceNumber))
	assert.Nil(t, d.Shards[0].SequenceNumberRange.EndingSequenceNumber, "the shard is open")

	t.Run("deleting the table closes the stream", func(t *testing.T) {
		_, err := e.ddb.PutItem(c, &dynamodb.PutItemInput{TableName: &tableA, Item: item{"pk": s("a"), "sk": n("1")}})
		require.NoError(t, err)
		it, err := e.streams.GetShardIterator(c, &dynamodbstreams.GetShardIteratorInput{StreamArn: &arnA,
			ShardId: aws.String(ddbstream.ShardID), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
		require.NoError(t, err)

		_, err = e.ddb.DeleteTable(c, &dynamodb.DeleteTableInput{TableName: &tableA})
		require.NoError(t, err)

		desc, err := e.streams.DescribeStream(c, streamDescribe(arnA))
		require.NoError(t, err)
		assert.Equal(t, streamtypes.StreamStatusDisabled, desc.StreamDescription.StreamStatus)
		assert.Equal(t, ddbstream.SequenceString(1), aws.ToString(desc.StreamDescription.Shards[0].SequenceNumberRange.EndingSequenceNumber))

		out, err := e.streams.GetRecords(c, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
		require.NoError(t, err)
		require.Len(t, out.Records, 1, "records outlive the table")
		assert.Nil(t, out.NextShardIterator, "a closed shard read to its end has no next iterator")
	})
}

// The records on the wire have the shape Lambda and the Streams API use,
// and every attribute type survives the trip from PutItem to GetRecords.
func TestAttributeValuesRoundTrip(t *testing.T) {
	t.Parallel()
	e := setup(t)
	table, arn := e.createTable(t, "NEW_AND_OLD_IMAGES", true)
	written := item{
		"pk":    s("ünïcode ✓"),
		"sk":    n("123456789012345678901234567890.123456789"),
		"neg":   n("-0.000000000000000000000000000000001"),
		"bin":   &ddbtypes.AttributeValueMemberB{Value: []byte{0, 1, 2, 0xfe, 0xff}},
		"yes":   &ddbtypes.AttributeValueMemberBOOL{Value: true},
		"no":    &ddbtypes.AttributeValueMemberBOOL{Value: false},
		"nil":   &ddbtypes.AttributeValueMemberNULL{Value: true},
		"ss":    &ddbtypes.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns":    &ddbtypes.AttributeValueMemberNS{Value: []string{"1", "2.5", "99999999999999999999999999999999999999"}},
		"bs":    &ddbtypes.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
		"empty": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{}},
		"list": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{
			s("x"), n("1"), &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{n("2")}},
			&ddbtypes.AttributeValueMemberM{Value: item{"deep": &ddbtypes.AttributeValueMemberNULL{Value: true}}},
		}},
		"map": &ddbtypes.AttributeValueMemberM{Value: item{
			"inner": &ddbtypes.AttributeValueMemberM{Value: item{"b": &ddbtypes.AttributeValueMemberB{Value: []byte("hi")}}},
			"n":     n("3.14"),
		}},
	}
	_, err := e.ddb.PutItem(ctx(t), &dynamodb.PutItemInput{TableName: &table, Item: written})
	require.NoError(t, err)

	t.Run("through the SDK", func(t *testing.T) {
		recs := e.readStream(t, arn, streamtypes.ShardIteratorTypeTrimHorizon, "")
		require.Len(t, recs, 1)
		assert.Equal(t, written, fromStreamItem(recs[0].Dynamodb.NewImage))
		assert.Equal(t, item{"pk": written["pk"], "sk": written["sk"]}, fromStreamItem(recs[0].Dynamodb.Keys))
	})

	t.Run("as Lambda receives it", func(t *testing.T) {
		recs, err := e.log.Since(arn, 0, 10)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		wire, err := json.Marshal(events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{recs[0].Event}})
		require.NoError(t, err)
		var decoded events.DynamoDBEvent
		require.NoError(t, json.Unmarshal(wire, &decoded))
		got := decoded.Records[0]
		assert.Equal(t, recs[0].Event.Change.NewImage, got.Change.NewImage)
		assert.Equal(t, recs[0].Event.Change.Keys, got.Change.Keys)
		assert.Equal(t, arn, got.EventSourceArn)
		assert.Equal(t, "123456789012345678901234567890.123456789", got.Change.NewImage["sk"].Number())
		assert.Equal(t, []byte{0, 1, 2, 0xfe, 0xff}, got.Change.NewImage["bin"].Binary())
		assert.Equal(t, []byte("hi"), got.Change.NewImage["map"].Map()["inner"].Map()["b"].Binary())
		assert.True(t, got.Change.NewImage["list"].List()[3].Map()["deep"].IsNull())
		assert.True(t, recs[0].Event.Change.ApproximateCreationDateTime.Equal(got.Change.ApproximateCreationDateTime.Time))
	})

	t.Run("raw GetRecords JSON", func(t *testing.T) {
		it, err := e.streams.GetShardIterator(ctx(t), &dynamodbstreams.GetShardIteratorInput{StreamArn: &arn,
			ShardId: aws.String(ddbstream.ShardID), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
		require.NoError(t, err)
		body := postJSON(t, e.url, "DynamoDBStreams_20120810.GetRecords", map[string]any{"ShardIterator": it.ShardIterator})
		var out struct {
			Records []map[string]json.RawMessage
		}
		require.NoError(t, json.Unmarshal(body, &out))
		require.Len(t, out.Records, 1)
		assert.NotContains(t, out.Records[0], "eventSourceARN", "only Lambda adds the source ARN")
		var change struct {
			ApproximateCreationDateTime json.Number
			NewImage                    map[string]json.RawMessage
		}
		require.NoError(t, json.Unmarshal(out.Records[0]["dynamodb"], &change))
		assert.NotContains(t, change.ApproximateCreationDateTime.String(), ".", "whole seconds")
		assert.JSONEq(t, `{"N":"123456789012345678901234567890.123456789"}`, string(change.NewImage["sk"]))
		assert.JSONEq(t, `{"B":"AAEC/v8="}`, string(change.NewImage["bin"]))
		assert.JSONEq(t, `{"NULL":true}`, string(change.NewImage["nil"]))
		assert.JSONEq(t, `{"M":{"inner":{"M":{"b":{"B":"aGk="}}},"n":{"N":"3.14"}}}`, string(change.NewImage["map"]))
	})
}

func postJSON(t *testing.T, url, target string, payload any) []byte {
	t.Helper()
	b, err := json.Marshal(payload)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, url, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", target)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	return body
}
