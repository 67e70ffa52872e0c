package store

import (
	"context"
	"reflect"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// putNew puts item into the club table only if no item has its key, and
// reports whether the item there now is this one.
//
// A put whose answer was lost (DynamoDB did the work, the answer never
// arrived: the SDK retries an InternalServerError or a broken connection)
// is carried out again by the retry, which then fails its own condition.
// So a failed condition is read once, consistently: when the item there is
// exactly this item, this call wrote it and the put succeeded. Any other
// item under the key is someone else's, and putNew reports false.
func (b *base) putNew(ctx context.Context, item map[string]types.AttributeValue) (bool, error) {
	_, err := b.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(b.cfg.ClubTable),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if err == nil {
		return true, nil
	}
	if !isConditionFailed(err) {
		return false, err
	}
	held, found, err := b.getItem(ctx, b.cfg.ClubTable, map[string]types.AttributeValue{attrPK: item[attrPK], attrSK: item[attrSK]})
	if err != nil {
		return false, err
	}
	return found && reflect.DeepEqual(held, item), nil
}
