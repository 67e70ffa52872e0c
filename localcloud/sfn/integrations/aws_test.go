package integrations_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/logging"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/sfn"
	"github.com/clubdev/club/localcloud/sfn/integrations"
	"github.com/clubdev/club/localcloud/sfn/sfntest"
)

// emulatorConfig points the SDK at the kumo server all tests share (kumo's
// services are process-wide anyway).
var emulatorConfig aws.Config

func TestMain(m *testing.M) {
	srv := kumo.NewServer()
	emulatorConfig = aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		// kumo's X-Amz-Crc32 does not match; the SDK would warn on every call.
		Logger: logging.Nop{},
	}
	code := m.Run()
	srv.Close()
	os.Exit(code)
}

// awsEnv is an executor whose integrations call the emulator.
type awsEnv struct {
	*sfntest.Env
	cfg integrations.Config
	ddb *dynamodb.Client
	sqs *sqs.Client
	sns *sns.Client
}

func setupAWS(t *testing.T) *awsEnv {
	t.Helper()
	cfg := integrations.FromAWSConfig(emulatorConfig, sfntest.NewFunctions())
	e := sfntest.New(t, sfntest.Options{Integrations: cfg})
	return &awsEnv{Env: e, cfg: cfg, ddb: cfg.DynamoDB.(*dynamodb.Client), sqs: cfg.SQS.(*sqs.Client), sns: cfg.SNS.(*sns.Client)}
}

func (e *awsEnv) queue(t *testing.T, name string) string {
	t.Helper()
	out, err := e.sqs.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	require.NoError(t, err)
	return aws.ToString(out.QueueUrl)
}

func (e *awsEnv) receive(t *testing.T, url string) string {
	t.Helper()
	out, err := e.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 5, MaxNumberOfMessages: 1})
	require.NoError(t, err)
	require.Len(t, out.Messages, 1, "a message on %s", url)
	return aws.ToString(out.Messages[0].Body)
}

func TestDynamoDBItemOperations(t *testing.T) {
	t.Parallel()
	e := setupAWS(t)
	ctx := context.Background()
	_, err := e.ddb.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("sfn-purchases"),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
	})
	require.NoError(t, err)
	x, h := run(t, e.Env, `{
	  "StartAt": "Put",
	  "States": {
	    "Put": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:putItem",
	      "Parameters": {"TableName": "sfn-purchases", "Item": {"pk": {"S.$": "$.id"}, "status": {"S": "reserved"},
	        "seats": {"N": "2"}, "tags": {"SS": ["a", "b"]}, "meta": {"M": {"ok": {"BOOL": true}, "none": {"NULL": true}}}}},
	      "ResultPath": null, "Next": "Confirm"},
	    "Confirm": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:updateItem",
	      "Parameters": {"TableName": "sfn-purchases", "Key": {"pk": {"S.$": "$.id"}},
	        "UpdateExpression": "SET #s = :new", "ConditionExpression": "#s = :old",
	        "ExpressionAttributeNames": {"#s": "status"},
	        "ExpressionAttributeValues": {":new": {"S": "confirmed"}, ":old": {"S": "reserved"}},
	        "ReturnValues": "ALL_NEW"},
	      "ResultSelector": {"status.$": "$.Attributes.status.S"}, "ResultPath": "$.confirm", "Next": "Read"},
	    "Read": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:getItem",
	      "Parameters": {"TableName": "sfn-purchases", "Key": {"pk": {"S.$": "$.id"}}, "ConsistentRead": true},
	      "ResultSelector": {"item.$": "$.Item"}, "ResultPath": "$.read", "Next": "ConfirmAgain"},
	    "ConfirmAgain": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:updateItem",
	      "Parameters": {"TableName": "sfn-purchases", "Key": {"pk": {"S.$": "$.id"}},
	        "UpdateExpression": "SET #s = :new", "ConditionExpression": "#s = :old",
	        "ExpressionAttributeNames": {"#s": "status"},
	        "ExpressionAttributeValues": {":new": {"S": "confirmed"}, ":old": {"S": "reserved"}}},
	      "Catch": [{"ErrorEquals": ["DynamoDB.ConditionalCheckFailedException"], "ResultPath": "$.conflict", "Next": "Delete"}],
	      "Next": "Delete"},
	    "Delete": {"Type": "Task", "Resource": "arn:aws:states:::dynamodb:deleteItem",
	      "Parameters": {"TableName": "sfn-purchases", "Key": {"pk": {"S.$": "$.id"}}, "ReturnValues": "ALL_OLD"},
	      "ResultSelector": {"old.$": "$.Attributes.status.S"}, "ResultPath": "$.deleted", "End": true}
	  }}`, `{"id":"p-42"}`)
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+" "+x.Cause)
	var out struct {
		Confirm  struct{ Status string }
		Read     struct{ Item map[string]any }
		Conflict struct{ Error, Cause string }
		Deleted  struct{ Old string }
	}
	require.NoError(t, json.Unmarshal([]byte(x.Output), &out))
	require.Equal(t, "confirmed", out.Confirm.Status)
	require.Equal(t, map[string]any{
		"pk": map[string]any{"S": "p-42"}, "status": map[string]any{"S": "confirmed"}, "seats": map[string]any{"N": "2"},
		"tags": map[string]any{"SS": []any{"a", "b"}},
		"meta": map[string]any{"M": map[string]any{"ok": map[string]any{"BOOL": true}, "none": map[string]any{"NULL": true}}},
	}, out.Read.Item)
	require.Equal(t, "DynamoDB.ConditionalCheckFailedException", out.Conflict.Error)
	require.Contains(t, out.Conflict.Cause, "Service: AmazonDynamoDBv2")
	require.Equal(t, "confirmed", out.Deleted.Old)

	got, err := e.ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("sfn-purchases"),
		Key: map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "p-42"}}})
	require.NoError(t, err)
	require.Nil(t, got.Item, "the item was deleted")
	for _, ev := range h {
		if ev.Type == sfn.EventTaskScheduled {
			require.Equal(t, "dynamodb", ev.Details.ResourceType)
		}
	}
}

func TestSQSSendAndCallback(t *testing.T) {
	t.Parallel()
	e := setupAWS(t)
	ctx := context.Background()
	url := e.queue(t, "sfn-notifications")

	x, _ := run(t, e.Env, `{"StartAt":"Send","States":{"Send":{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage",
	  "Parameters":{"QueueUrl":"`+url+`","MessageBody":{"event":"purchase.confirmed","id.$":"$.id"},
	    "MessageAttributes":{"type":{"DataType":"String","StringValue":"purchase"}}},
	  "ResultSelector":{"id.$":"$.MessageId","md5.$":"$.MD5OfMessageBody"},"End":true}}}`, `{"id":"p-1"}`)
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+" "+x.Cause)
	require.JSONEq(t, `{"event":"purchase.confirmed","id":"p-1"}`, e.receive(t, url))
	var sent struct{ ID, MD5 string }
	require.NoError(t, json.Unmarshal([]byte(x.Output), &sent))
	require.NotEmpty(t, sent.ID)
	require.NotEmpty(t, sent.MD5)

	// The callback pattern end to end: the token travels in the message, a
	// worker reads it from the queue and completes the task. (No
	// TimeoutSeconds: with AutoAdvance it would expire before the worker
	// answers, as the executor is idle while it waits.)
	sm, err := e.Service.CreateStateMachine(ctx, sfn.CreateStateMachineInput{Name: "cb", Definition: `{"StartAt":"Hold","States":{"Hold":{
	  "Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage.waitForTaskToken",
	  "Parameters":{"QueueUrl":"` + url + `","MessageBody":{"token.$":"$$.Task.Token"}},"End":true}}}`})
	require.NoError(t, err)
	started, err := e.Service.StartExecution(ctx, sfn.StartExecutionInput{StateMachineArn: sm.ARN})
	require.NoError(t, err)
	var msg struct{ Token string }
	require.NoError(t, json.Unmarshal([]byte(e.receive(t, url)), &msg))
	require.NoError(t, e.Service.SendTaskSuccess(ctx, msg.Token, `{"worker":"done"}`))
	done, err := e.Service.WaitForCompletion(ctx, started.ARN)
	require.NoError(t, err)
	require.Equal(t, sfn.StatusSucceeded, done.Status)
	require.JSONEq(t, `{"worker":"done"}`, done.Output)
}

func TestSNSPublishReachesSubscribedQueue(t *testing.T) {
	t.Parallel()
	e := setupAWS(t)
	ctx := context.Background()
	topic, err := e.sns.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("sfn-events")})
	require.NoError(t, err)
	url := e.queue(t, "sfn-events-sub")
	attrs, err := e.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	require.NoError(t, err)
	_, err = e.sns.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
		Endpoint: aws.String(attrs.Attributes["QueueArn"]), Attributes: map[string]string{"RawMessageDelivery": "true"}})
	require.NoError(t, err)

	x, _ := run(t, e.Env, `{"StartAt":"Publish","States":{"Publish":{"Type":"Task","Resource":"arn:aws:states:::sns:publish",
	  "Parameters":{"TopicArn":"`+aws.ToString(topic.TopicArn)+`","Message":{"purchase.$":"$.id"},"Subject":"purchase"},
	  "ResultSelector":{"id.$":"$.MessageId"},"End":true}}}`, `{"id":"p-7"}`)
	require.Equal(t, sfn.StatusSucceeded, x.Status, x.Error+" "+x.Cause)
	require.Contains(t, x.Output, `"id":"`)
	require.JSONEq(t, `{"purchase":"p-7"}`, e.receive(t, url))
}

func TestServiceErrorsAreNamedByService(t *testing.T) {
	t.Parallel()
	e := setupAWS(t)
	x, h := run(t, e.Env, `{"StartAt":"Send","States":{"Send":{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage",
	  "Parameters":{"QueueUrl":"`+aws.ToString(emulatorConfig.BaseEndpoint)+`/000000000000/no-such-queue","MessageBody":"x"},
	  "Catch":[{"ErrorEquals":["States.TaskFailed"],"Next":"Failed"}],"End":true},
	  "Failed":{"Type":"Pass","End":true}}}`, `{}`)
	require.Equal(t, sfn.StatusSucceeded, x.Status)
	var out struct{ Error string }
	require.NoError(t, json.Unmarshal([]byte(x.Output), &out))
	require.True(t, strings.HasPrefix(out.Error, "SQS."), "error %q", out.Error)
	require.Equal(t, sfn.EventTaskFailed, h[4].Type)
}

func TestIntegrationParametersAreChecked(t *testing.T) {
	t.Parallel()
	e := setupAWS(t)
	_, err := e.Service.CreateStateMachine(context.Background(), sfn.CreateStateMachineInput{Name: "bad", Definition: `{"StartAt":"P","States":{
	  "P":{"Type":"Task","Resource":"arn:aws:states:::dynamodb:putItem","Parameters":{"TableName":"t","Itme":{}},"Next":"S"},
	  "S":{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage","Parameters":{"QueueUrl":"q","Body":"x"},"Next":"N"},
	  "N":{"Type":"Task","Resource":"arn:aws:states:::dynamodb:getItem.waitForTaskToken","Parameters":{},"End":true}}}`})
	require.ErrorIs(t, err, sfn.ErrCode(sfn.CodeInvalidDefinition))
	for _, want := range []string{
		`the field "Itme" is not supported by arn:aws:states:::dynamodb:putItem`, `the field "Item" is required`, "at /States/P/Parameters",
		`the field "Body" is not supported`, "at /States/S/Parameters",
		`The resource "arn:aws:states:::dynamodb:getItem.waitForTaskToken" is not supported`,
	} {
		require.Contains(t, err.Error(), want)
	}
}
