package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Table is the definition of one table: what CreateTable needs plus the TTL
// attribute, which AWS sets with a separate call.
type Table struct {
	Create       dynamodb.CreateTableInput
	TTLAttribute string
}

// Tables returns the definitions of the two tables, named as in cfg. They are
// the same as the template's (internal/store/testdata/template-tables.yaml is
// checked against them); use them to create tables in tests and local tools.
func Tables(cfg Config) []Table {
	return []Table{
		{
			Create: dynamodb.CreateTableInput{
				TableName:   aws.String(cfg.ClubTable),
				BillingMode: types.BillingModePayPerRequest,
				AttributeDefinitions: []types.AttributeDefinition{
					{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS},
					{AttributeName: aws.String(attrSK), AttributeType: types.ScalarAttributeTypeS},
					{AttributeName: aws.String(attrClassTeacher), AttributeType: types.ScalarAttributeTypeS},
					{AttributeName: aws.String(attrStartsAt), AttributeType: types.ScalarAttributeTypeS},
					{AttributeName: aws.String(attrCreatedBy), AttributeType: types.ScalarAttributeTypeS},
					{AttributeName: aws.String(attrCreatedAt), AttributeType: types.ScalarAttributeTypeS},
				},
				KeySchema: []types.KeySchemaElement{
					{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
					{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
				},
				GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
					{
						IndexName: aws.String(indexClassesByTeacher),
						KeySchema: []types.KeySchemaElement{
							{AttributeName: aws.String(attrClassTeacher), KeyType: types.KeyTypeHash},
							{AttributeName: aws.String(attrStartsAt), KeyType: types.KeyTypeRange},
						},
						// Keys only: a seat taken (the hot path) changes no
						// projected attribute, so it costs the index nothing.
						Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
					},
					{
						IndexName: aws.String(indexOperationsByCreator),
						KeySchema: []types.KeySchemaElement{
							{AttributeName: aws.String(attrCreatedBy), KeyType: types.KeyTypeHash},
							{AttributeName: aws.String(attrCreatedAt), KeyType: types.KeyTypeRange},
						},
						Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
					},
				},
			},
			TTLAttribute: attrTTL,
		},
		{
			Create: dynamodb.CreateTableInput{
				TableName:   aws.String(cfg.OutboxTable),
				BillingMode: types.BillingModePayPerRequest,
				AttributeDefinitions: []types.AttributeDefinition{
					{AttributeName: aws.String(attrEventID), AttributeType: types.ScalarAttributeTypeS},
					{AttributeName: aws.String(attrUnpublishedShard), AttributeType: types.ScalarAttributeTypeS},
					{AttributeName: aws.String(attrCreatedAt), AttributeType: types.ScalarAttributeTypeS},
				},
				KeySchema: []types.KeySchemaElement{
					{AttributeName: aws.String(attrEventID), KeyType: types.KeyTypeHash},
				},
				GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
					IndexName: aws.String(indexUnpublished),
					KeySchema: []types.KeySchemaElement{
						{AttributeName: aws.String(attrUnpublishedShard), KeyType: types.KeyTypeHash},
						{AttributeName: aws.String(attrCreatedAt), KeyType: types.KeyTypeRange},
					},
					Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
				}},
				StreamSpecification: &types.StreamSpecification{
					StreamEnabled:  aws.Bool(true),
					StreamViewType: types.StreamViewTypeNewImage,
				},
			},
			TTLAttribute: attrTTL,
		},
	}
}

// TableAdmin is the part of *dynamodb.Client that CreateTables uses.
type TableAdmin interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// CreateTables creates the tables of cfg, waits until they are active and
// enables their TTL. It is for tests and local tools; deployed stacks get the
// tables from the template. Existing tables are an error.
func CreateTables(ctx context.Context, admin TableAdmin, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	for _, t := range Tables(cfg) {
		name := aws.ToString(t.Create.TableName)
		in := t.Create
		if _, err := admin.CreateTable(ctx, &in); err != nil {
			return fmt.Errorf("create table %s: %w", name, err)
		}
		waiter := dynamodb.NewTableExistsWaiter(admin, func(o *dynamodb.TableExistsWaiterOptions) {
			o.MinDelay = 50 * time.Millisecond
			o.MaxDelay = time.Second
		})
		if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}, time.Minute); err != nil {
			return fmt.Errorf("wait for table %s: %w", name, err)
		}
		if _, err := admin.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName: in.TableName,
			TimeToLiveSpecification: &types.TimeToLiveSpecification{
				AttributeName: aws.String(t.TTLAttribute), Enabled: aws.Bool(true),
			},
		}); err != nil {
			return fmt.Errorf("enable TTL on %s: %w", name, err)
		}
	}
	return nil
}
