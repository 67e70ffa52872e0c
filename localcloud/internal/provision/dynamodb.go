package provision

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/clubdev/club/localcloud/template"
)

type dynamoDBAPI interface {
	CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTimeToLive(context.Context, *dynamodb.DescribeTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(context.Context, *dynamodb.UpdateTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

func (p *provisioner) tables(ctx context.Context) error {
	for _, t := range p.st.Tables {
		if err := p.table(ctx, t); err != nil {
			return resourceError("table", t.Source, t.Name, err)
		}
		p.result.Tables[t.Source] = t.Name
	}
	return nil
}

func (p *provisioner) table(ctx context.Context, t template.Table) error {
	in := &dynamodb.CreateTableInput{
		TableName: aws.String(t.Name),
		KeySchema: keySchema(t.KeySchema),
		// Capacity is not modelled locally: every table bills per request.
		BillingMode: types.BillingModePayPerRequest,
	}
	for _, a := range t.AttributeDefinitions {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(a.AttributeName),
			AttributeType: types.ScalarAttributeType(a.AttributeType),
		})
	}
	for _, ix := range t.GlobalSecondaryIndexes {
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName:  aws.String(ix.IndexName),
			KeySchema:  keySchema(ix.KeySchema),
			Projection: projection(ix),
		})
	}
	for _, ix := range t.LocalSecondaryIndexes {
		in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, types.LocalSecondaryIndex{
			IndexName:  aws.String(ix.IndexName),
			KeySchema:  keySchema(ix.KeySchema),
			Projection: projection(ix),
		})
	}
	if t.StreamViewType != "" {
		// The local cloud's front sees this and starts recording the
		// table's stream.
		in.StreamSpecification = &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: types.StreamViewType(t.StreamViewType),
		}
	}
	if _, err := p.c.dynamodb.CreateTable(ctx, in); err != nil && !hasCode(err, "ResourceInUseException") {
		return err
	}
	if t.TTLAttribute == "" {
		return nil
	}
	return p.timeToLive(ctx, t)
}

// timeToLive enables TTL unless it already is on the same attribute: AWS
// rejects enabling it twice.
func (p *provisioner) timeToLive(ctx context.Context, t template.Table) error {
	out, err := p.c.dynamodb.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(t.Name)})
	if err != nil {
		return fmt.Errorf("describe time to live: %w", err)
	}
	if d := out.TimeToLiveDescription; d != nil && aws.ToString(d.AttributeName) == t.TTLAttribute &&
		(d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = p.c.dynamodb.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(t.Name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(t.TTLAttribute),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("enable time to live: %w", err)
	}
	return nil
}

func keySchema(elems []template.KeySchemaElement) []types.KeySchemaElement {
	out := make([]types.KeySchemaElement, 0, len(elems))
	for _, e := range elems {
		out = append(out, types.KeySchemaElement{
			AttributeName: aws.String(e.AttributeName),
			KeyType:       types.KeyType(e.KeyType),
		})
	}
	return out
}

func projection(ix template.SecondaryIndex) *types.Projection {
	p := &types.Projection{ProjectionType: types.ProjectionType(ix.ProjectionType)}
	if len(ix.NonKeyAttributes) > 0 {
		p.NonKeyAttributes = ix.NonKeyAttributes
	}
	return p
}
