// Command ticker is a parity-test function for schedules: every scheduled
// event it receives becomes a row in the Seen table.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		panic(err)
	}
	db := dynamodb.NewFromConfig(cfg)
	table := os.Getenv("SEEN_TABLE")
	lambda.Start(func(ctx context.Context, ev events.EventBridgeEvent) error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(table),
			Item: map[string]types.AttributeValue{
				"pk":     &types.AttributeValueMemberS{Value: "tick"},
				"sk":     &types.AttributeValueMemberS{Value: ev.ID},
				"detail": &types.AttributeValueMemberS{Value: ev.DetailType},
				"source": &types.AttributeValueMemberS{Value: ev.Source},
			},
		})
		return err
	})
}
