package status

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// purchaseSortKey is the sort key of every purchase item of the club table
// (package store: pk PURCHASE#<purchase_id>, sk PURCHASE).
const purchaseSortKey = "PURCHASE"

// PurchaseScan counts the purchases of the club table by business status.
// The table has no index by status, so this is a Scan that reads the whole
// table and keeps the purchase items: fine for an operator's occasional
// look, not for a dashboard polling every second.
type PurchaseScan struct {
	DB    Scanner
	Table string
}

var _ PurchaseCounter = PurchaseScan{}

// CountByStatus implements PurchaseCounter.
func (s PurchaseScan) CountByStatus(ctx context.Context) (map[string]int, error) {
	counts := map[string]int{}
	pages := dynamodb.NewScanPaginator(s.DB, &dynamodb.ScanInput{
		TableName:                 aws.String(s.Table),
		FilterExpression:          aws.String("sk = :sk"),
		ProjectionExpression:      aws.String("#status"),
		ExpressionAttributeNames:  map[string]string{"#status": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":sk": &types.AttributeValueMemberS{Value: purchaseSortKey}},
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("scan purchases in %s: %w", s.Table, err)
		}
		var rows []struct {
			Status string `dynamodbav:"status"`
		}
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &rows); err != nil {
			return nil, fmt.Errorf("decode purchases: %w", err)
		}
		for _, r := range rows {
			counts[r.Status]++
		}
	}
	return counts, nil
}
