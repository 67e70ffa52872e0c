package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// The DynamoDB cases. Each creates its own tables, so they run in parallel
// and on an engine that outlives them.

const (
	docUpdateExpressions = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.UpdateExpressions.html"
	docProjections       = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ProjectionExpressions.html"
	docGSI               = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html"
	docSparse            = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-indexes-general-sparse-indexes.html"
	docQueryAPI          = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Query.html"
	docScanAPI           = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Scan.html"
	docPutItemAPI        = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html"
	docGetItemAPI        = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_GetItem.html"
	docBatchWriteAPI     = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html"
	docExpected          = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/LegacyConditionalParameters.Expected.html"
	docCapacity          = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html"
	docNumbers           = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.NamingRulesDataTypes.html"
)

var tableSeq atomic.Int64

func ddb(t *testing.T) *dynamodb.Client {
	t.Helper()
	return dynamodb.NewFromConfig(awsConfig(t))
}

// table creates a table keyed by pk (S) and, when sk is true, sk (S), with
// the given global secondary indexes (their key attributes are strings).
func table(t *testing.T, c *dynamodb.Client, sk bool, gsis ...types.GlobalSecondaryIndex) string {
	t.Helper()
	name := fmt.Sprintf("conformance-%d", tableSeq.Add(1))
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		KeySchema:   []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	}
	attrs := map[string]bool{"pk": true}
	if sk {
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange})
		attrs["sk"] = true
	}
	for _, g := range gsis {
		for _, k := range g.KeySchema {
			attrs[aws.ToString(k.AttributeName)] = true
		}
	}
	names := make([]string, 0, len(attrs))
	for a := range attrs {
		names = append(names, a)
	}
	sort.Strings(names)
	for _, a := range names {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(a), AttributeType: types.ScalarAttributeTypeS})
	}
	in.GlobalSecondaryIndexes = gsis
	_, err := c.CreateTable(context.Background(), in)
	require.NoError(t, err)
	return name
}

func gsi(name, hash, rng string, p types.ProjectionType, include ...string) types.GlobalSecondaryIndex {
	g := types.GlobalSecondaryIndex{
		IndexName:  aws.String(name),
		KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash}},
		Projection: &types.Projection{ProjectionType: p},
	}
	if rng != "" {
		g.KeySchema = append(g.KeySchema, types.KeySchemaElement{AttributeName: aws.String(rng), KeyType: types.KeyTypeRange})
	}
	if len(include) > 0 {
		g.Projection.NonKeyAttributes = include
	}
	return g
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
func l(vs ...types.AttributeValue) types.AttributeValue {
	return &types.AttributeValueMemberL{Value: vs}
}

func put(t *testing.T, c *dynamodb.Client, tbl string, item map[string]types.AttributeValue) {
	t.Helper()
	_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(tbl), Item: item})
	require.NoError(t, err)
}

func get(t *testing.T, c *dynamodb.Client, tbl string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(tbl), Key: key, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	return out.Item
}

// strs reads the string attribute name of each item.
func strs(items []map[string]types.AttributeValue, name string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		if v, ok := it[name].(*types.AttributeValueMemberS); ok {
			out = append(out, v.Value)
		} else {
			out = append(out, "<missing>")
		}
	}
	return out
}

func attrNames(item map[string]types.AttributeValue) []string {
	out := make([]string, 0, len(item))
	for k := range item {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// refusedOr runs the case's request; when the local cloud refuses it (as
// by design on an engine that cannot carry it out), the case is recorded as
// refused and check is not run; otherwise check asserts AWS's behaviour.
func refusedOr(t *testing.T, err error, feature string, check func()) {
	t.Helper()
	var api interface{ ErrorMessage() string }
	if err != nil && errors.As(err, &api) && isLocalRefusal(api.ErrorMessage()) {
		refusedByDesign(t, err, feature)
		return
	}
	require.NoError(t, err)
	check()
}

func isLocalRefusal(msg string) bool { return strings.Contains(msg, "local cloud") }
