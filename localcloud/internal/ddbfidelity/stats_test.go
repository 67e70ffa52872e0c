package ddbfidelity_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/sdkhttp"
	"github.com/clubdev/club/localcloud/internal/dataplane"
)

// Every refusal is counted by feature, every correction by kind, and a
// request the engine carries out as AWS does is neither.
func TestRefusalsAndCorrectionsAreCounted(t *testing.T) {
	t.Parallel()
	srv := kumo.NewServer()
	t.Cleanup(srv.Close)
	ep, err := dataplane.New(dataplane.Options{Engine: "kumo", EngineURL: srv.URL})
	require.NoError(t, err)
	t.Cleanup(ep.Close)
	hs := httptest.NewServer(ep)
	t.Cleanup(hs.Close)
	c := dynamodb.NewFromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(hs.URL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""), HTTPClient: sdkhttp.New()})
	ctx := context.Background()
	_, err = c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("counted"), BillingMode: types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}}})
	require.NoError(t, err)
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}
	_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("counted"), Key: key,
		UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}})
	require.NoError(t, err)
	require.Empty(t, ep.Fidelity.Stats().Refused, "an integer counter is carried out by the engine")
	require.Empty(t, ep.Fidelity.Stats().Corrected)

	for range 2 {
		_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("counted"), Key: key,
			UpdateExpression: aws.String("SET l = list_append(l, :v)"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberL{}}})
		require.ErrorContains(t, err, "the local cloud refuses list_append")
	}
	_, err = c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("arn:aws:dynamodb:us-east-1:000000000000:table/counted"), Key: key})
	require.NoError(t, err)
	st := ep.Fidelity.Stats()
	require.Equal(t, map[string]int64{"list_append in an UpdateExpression": 2}, st.Refused)
	require.Equal(t, map[string]int64{"table ARN as TableName": 1}, st.Corrected)
}

// A table the layer did not see created (kept from an earlier run) may hold
// decimals the layer never saw written: an update's arithmetic on it reads
// the item first, and is refused when the stored number is inexact in
// floating point, as for a table created through the layer.
func TestArithmeticOnATableCreatedElsewhereReadsTheItem(t *testing.T) {
	t.Parallel()
	srv := kumo.NewServer()
	t.Cleanup(srv.Close)
	client := func(url string) *dynamodb.Client {
		return dynamodb.NewFromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(url),
			Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""), HTTPClient: sdkhttp.New()})
	}
	ctx := context.Background()
	bare := client(srv.URL)
	_, err := bare.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("elsewhere"), BillingMode: types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}}})
	require.NoError(t, err)
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}
	_, err = bare.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("elsewhere"), Item: map[string]types.AttributeValue{
		"pk": key["pk"], "d": &types.AttributeValueMemberN{Value: "0.14"}, "i": &types.AttributeValueMemberN{Value: "7"}}})
	require.NoError(t, err)

	ep, err := dataplane.New(dataplane.Options{Engine: "kumo", EngineURL: srv.URL})
	require.NoError(t, err)
	t.Cleanup(ep.Close)
	hs := httptest.NewServer(ep)
	t.Cleanup(hs.Close)
	c := client(hs.URL)
	one := map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}
	_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("elsewhere"), Key: key,
		UpdateExpression: aws.String("ADD d :one"), ExpressionAttributeValues: one})
	require.ErrorContains(t, err, "the local cloud refuses decimal arithmetic")
	_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("elsewhere"), Key: key,
		UpdateExpression: aws.String("ADD i :one"), ExpressionAttributeValues: one})
	require.NoError(t, err, "an integer is added")
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("elsewhere"), Key: key, ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	require.Equal(t, &types.AttributeValueMemberN{Value: "0.14"}, out.Item["d"], "the refused update changed nothing")
	require.Equal(t, &types.AttributeValueMemberN{Value: "8"}, out.Item["i"])
}
