// Command streamworker is a parity-test function for DynamoDB stream event
// source mappings. It records every record it receives in the Seen table and
// fails the whole batch when one record has poison = true.
package main

import (
	"context"
	"errors"
	"os"

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

// errPoison is returned for a batch holding a poison record.
var errPoison = errors.New("poison record in batch")

func (h handler) handle(ctx context.Context, ev events.DynamoDBEvent) error {
	for _, r := range ev.Records {
		if p, ok := r.Change.NewImage["poison"]; ok && p.DataType() == events.DataTypeBoolean && p.Boolean() {
			return errPoison
		}
	}
	for _, r := range ev.Records {
		id := r.Change.Keys["id"].String()
		_, err := h.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(h.table),
			Item: map[string]types.AttributeValue{
				"pk":    &types.AttributeValueMemberS{Value: "stream#" + id},
				"sk":    &types.AttributeValueMemberS{Value: r.Change.SequenceNumber},
				"event": &types.AttributeValueMemberS{Value: r.EventName},
			},
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		panic(err)
	}
	h := handler{db: dynamodb.NewFromConfig(cfg), table: os.Getenv("SEEN_TABLE")}
	lambda.Start(h.handle)
}
