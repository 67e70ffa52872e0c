package ddbstream_test

import (
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// The three benchmarks put the same item shape through the SDK: to a
// stream-enabled table through the recorder, to a table without a stream
// through the recorder, and straight to kumo. The differences are the cost
// of recording (two consistent reads and the lock) and of the front itself.

func BenchmarkRecordedPutItem(b *testing.B) {
	e := setup(b)
	table, _ := e.createTable(b, "NEW_AND_OLD_IMAGES", false)
	benchmarkPutItem(b, e.ddb, table)
}

func BenchmarkPassthroughPutItem(b *testing.B) {
	e := setup(b)
	table, _ := e.createTable(b, "", false)
	benchmarkPutItem(b, e.ddb, table)
}

func BenchmarkDirectPutItem(b *testing.B) {
	e := setup(b)
	table, _ := e.createTable(b, "", false)
	benchmarkPutItem(b, dynamodb.NewFromConfig(sdkConfig(kumoURL.String(), &logBuffer{})), table)
}

func benchmarkPutItem(b *testing.B, client *dynamodb.Client, table string) {
	c := ctx(b)
	i := 0
	for b.Loop() {
		i++
		_, err := client.PutItem(c, &dynamodb.PutItemInput{TableName: &table, Item: item{
			"pk": s(strconv.Itoa(i % 1000)), "v": n(strconv.Itoa(i)), "payload": s("enrollment.created"),
		}})
		if err != nil {
			b.Fatal(err)
		}
	}
}
