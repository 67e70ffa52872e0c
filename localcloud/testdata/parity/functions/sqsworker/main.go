// Command sqsworker is a parity-test function for SQS event source mappings.
// For each message it records the delivery in the Seen table. Bodies steer it:
// "fail:<id>" reports the message as a batch item failure, "crash" exits the
// process mid-invocation, "slow:<ms>" works for that long and records when.
package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

type handler struct {
	db    *dynamodb.Client
	table string
}

func (h handler) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, m := range ev.Records {
		switch {
		case m.Body == "crash":
			os.Exit(3)
		case strings.HasPrefix(m.Body, "fail:"):
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			if err := h.record(ctx, "delivery#"+m.MessageId, m, 0, 0); err != nil {
				return resp, err
			}
			continue
		}
		start := time.Now()
		if ms, ok := strings.CutPrefix(m.Body, "slow:"); ok {
			n, _ := strconv.Atoi(ms)
			time.Sleep(time.Duration(n) * time.Millisecond)
		}
		if err := h.record(ctx, "done#"+m.MessageId, m, start.UnixMicro(), time.Now().UnixMicro()); err != nil {
			return resp, err
		}
	}
	return resp, nil
}

// record adds one row per delivery: pk is the message, sk the receive count.
func (h handler) record(ctx context.Context, pk string, m events.SQSMessage, start, end int64) error {
	_, err := h.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(h.table),
		Item: map[string]types.AttributeValue{
			"pk":    &types.AttributeValueMemberS{Value: pk},
			"sk":    &types.AttributeValueMemberS{Value: m.Attributes["ApproximateReceiveCount"]},
			"body":  &types.AttributeValueMemberS{Value: m.Body},
			"start": &types.AttributeValueMemberN{Value: strconv.FormatInt(start, 10)},
			"end":   &types.AttributeValueMemberN{Value: strconv.FormatInt(end, 10)},
		},
	})
	return err
}

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		panic(err)
	}
	h := handler{db: dynamodb.NewFromConfig(cfg), table: os.Getenv("SEEN_TABLE")}
	lambda.Start(h.handle)
}
