package template_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/internal/ddbstream"
	"github.com/clubdev/club/localcloud/template"
)

const (
	account = "000000000000"
	region  = "us-east-1"
)

// loadClub parses the fixture that uses every supported resource type,
// property and event.
func loadClub(t *testing.T) *template.Stack {
	t.Helper()
	st, err := template.Load(filepath.Join("testdata", "club", "template.yaml"), template.Options{})
	require.NoError(t, err)
	return st
}

func fixtureDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "club"))
	require.NoError(t, err)
	return dir
}

func TestLoadStackDefaults(t *testing.T) {
	t.Parallel()
	st := loadClub(t)
	require.Equal(t, "club", st.Name)
	require.Equal(t, region, st.Region)
	require.Equal(t, account, st.AccountID)
	require.Equal(t, fixtureDir(t), st.Dir)
	require.Equal(t, map[string]string{
		"Stage":               "dev",
		"NotifierConcurrency": "5",
		"JwtIssuer":           "https://issuer.example.com/",
		"JwtAudiences":        "club-api,club-cli",
	}, st.Parameters)
}

func TestLoadTables(t *testing.T) {
	t.Parallel()
	st := loadClub(t)
	require.Len(t, st.Tables, 2)

	club := st.Tables[0]
	require.Equal(t, template.Table{
		Source: "ClubTable",
		Name:   "club-club",
		ARN:    "arn:aws:dynamodb:us-east-1:000000000000:table/club-club",
		AttributeDefinitions: []template.AttributeDefinition{
			{AttributeName: "pk", AttributeType: "S"},
			{AttributeName: "sk", AttributeType: "S"},
			{AttributeName: "gsi1pk", AttributeType: "S"},
		},
		KeySchema: []template.KeySchemaElement{
			{AttributeName: "pk", KeyType: "HASH"},
			{AttributeName: "sk", KeyType: "RANGE"},
		},
		BillingMode: "PAY_PER_REQUEST",
		GlobalSecondaryIndexes: []template.SecondaryIndex{{
			IndexName: "gsi1",
			KeySchema: []template.KeySchemaElement{
				{AttributeName: "gsi1pk", KeyType: "HASH"},
				{AttributeName: "sk", KeyType: "RANGE"},
			},
			ProjectionType:   "INCLUDE",
			NonKeyAttributes: []string{"title"},
		}},
		TTLAttribute: "expires_at",
		SSEEnabled:   true,
	}, club)

	outbox := st.Tables[1]
	require.Equal(t, "OutboxTable", outbox.Source)
	require.Equal(t, "club-OutboxTable", outbox.Name, "generated name is <stack>-<logical id>")
	require.Equal(t, "NEW_AND_OLD_IMAGES", outbox.StreamViewType)
	require.Equal(t, ddbstream.StreamARN(outbox.ARN), outbox.StreamARN)
	require.Empty(t, outbox.TTLAttribute)

	got, ok := st.TableByStreamARN(outbox.StreamARN)
	require.True(t, ok)
	require.Equal(t, "OutboxTable", got.Source)
}

func TestLoadQueues(t *testing.T) {
	t.Parallel()
	st := loadClub(t)
	byName := map[string]template.Queue{}
	for _, q := range st.Queues {
		byName[q.Source] = q
	}
	require.Len(t, byName, 4)

	dlqARN := "arn:aws:sqs:us-east-1:000000000000:club-notifications-dlq"
	require.Equal(t, template.Queue{
		Source:                 "NotificationsQueue",
		Name:                   "club-notifications",
		URL:                    "http://127.0.0.1:4566/000000000000/club-notifications",
		ARN:                    "arn:aws:sqs:us-east-1:000000000000:club-notifications",
		VisibilityTimeout:      180 * time.Second,
		MessageRetentionPeriod: 4 * 24 * time.Hour,
		ReceiveMessageWaitTime: 20 * time.Second, // written as the string "20"
		RedrivePolicy:          &template.RedrivePolicy{DeadLetterTargetARN: dlqARN, MaxReceiveCount: 5},
		SQSManagedSSE:          true,
	}, byName["NotificationsQueue"])

	require.Equal(t, 14*24*time.Hour, byName["NotificationsDLQ"].MessageRetentionPeriod)
	require.Equal(t, 30*time.Second, byName["NotificationsDLQ"].VisibilityTimeout, "SQS default")
	require.Nil(t, byName["NotificationsDLQ"].RedrivePolicy)

	// RedrivePolicy written as a JSON string with a quoted count.
	require.Equal(t, &template.RedrivePolicy{DeadLetterTargetARN: dlqARN, MaxReceiveCount: 3}, byName["AnalyticsQueue"].RedrivePolicy)

	fifo := byName["OrderedQueue"]
	require.Equal(t, "club-OrderedQueue.fifo", fifo.Name, "a generated FIFO queue name ends in .fifo")
	require.True(t, fifo.FIFO)
	require.True(t, fifo.ContentBasedDeduplication)

	q, ok := st.QueueByARN(dlqARN)
	require.True(t, ok)
	require.Equal(t, "NotificationsDLQ", q.Source)

	require.Len(t, st.QueuePolicies, 1)
	require.Equal(t, []string{"http://127.0.0.1:4566/000000000000/club-notifications"}, st.QueuePolicies[0].QueueURLs)
	require.Contains(t, string(st.QueuePolicies[0].PolicyDocument), `"aws:SourceArn":"arn:aws:sns:us-east-1:000000000000:club-events"`)
}

func TestLoadTopicsAndSubscriptions(t *testing.T) {
	t.Parallel()
	st := loadClub(t)
	topicARN := "arn:aws:sns:us-east-1:000000000000:club-events"
	require.Equal(t, []template.Topic{{Source: "EventsTopic", Name: "club-events", ARN: topicARN, KMSMasterKeyID: "alias/aws/sns"}}, st.Topics)
	require.Equal(t, []template.Subscription{
		{
			Source:   "EventsTopic.Subscription[0]",
			TopicARN: topicARN,
			Protocol: "sqs",
			Endpoint: "arn:aws:sqs:us-east-1:000000000000:club-AnalyticsQueue",
		},
		{
			Source:             "NotificationsSubscription",
			TopicARN:           topicARN,
			Protocol:           "sqs",
			Endpoint:           "arn:aws:sqs:us-east-1:000000000000:club-notifications",
			RawMessageDelivery: true,
			FilterPolicy:       `{"type":["enrollment.created"]}`,
			FilterPolicyScope:  "MessageAttributes",
			RedrivePolicy:      `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:club-notifications-dlq"}`,
		},
	}, st.Subscriptions)
}

func TestLoadBucket(t *testing.T) {
	t.Parallel()
	st := loadClub(t)
	require.Equal(t, []template.Bucket{{
		Source: "ExportsBucket",
		Name:   "club-exportsbucket", // generated bucket names are lower case
		ARN:    "arn:aws:s3:::club-exportsbucket",
		// BucketEncryption's algorithm is kept for the template's checks.
		SSEAlgorithm: "AES256",
	}}, st.Buckets)
}

func TestLoadFunctions(t *testing.T) {
	t.Parallel()
	st := loadClub(t)
	require.Len(t, st.Functions, 3)

	api, ok := st.Function("ApiFunction")
	require.True(t, ok)
	require.Equal(t, "club-ApiFunction", api.Name)
	require.Equal(t, "arn:aws:lambda:us-east-1:000000000000:function:club-ApiFunction", api.ARN)
	require.Equal(t, filepath.Join(fixtureDir(t), "functions", "api"), api.CodeDir)
	require.Equal(t, "HTTP API", api.Description)
	require.Equal(t, "bootstrap", api.Handler)
	require.Equal(t, "provided.al2023", api.Runtime)
	require.Equal(t, []string{"arm64"}, api.Architectures)
	require.Equal(t, 256, api.MemorySize)
	require.Equal(t, 10*time.Second, api.Timeout)
	require.Equal(t, "Active", api.Tracing)
	require.Equal(t, "go1.x", api.BuildMethod)
	require.NotNil(t, api.ReservedConcurrency)
	require.Equal(t, 20, *api.ReservedConcurrency)
	require.Equal(t, map[string]string{
		"STAGE":     "dev",
		"LOG_LEVEL": "debug", // the function's value wins over Globals
		"TABLE":     "club-club",
		"MAX_SEATS": "10000", // a number becomes text, as in CloudFormation
	}, api.Environment)
	require.JSONEq(t, `[
		{"DynamoDBCrudPolicy": {"TableName": "club-club"}},
		{"Statement": [{"Effect": "Allow", "Action": "states:StartExecution",
			"Resource": "arn:aws:states:us-east-1:000000000000:stateMachine:club-purchase"}]}
	]`, string(api.Policies))

	notifier, ok := st.Function("NotifierFunction")
	require.True(t, ok)
	require.Equal(t, "club-notifier", notifier.Name)
	require.Equal(t, 30*time.Second, notifier.Timeout)
	require.Nil(t, notifier.ReservedConcurrency)
	require.Equal(t, map[string]string{
		"STAGE":     "dev",
		"LOG_LEVEL": "info",
		"QUEUE_URL": "http://127.0.0.1:4566/000000000000/club-notifications",
	}, notifier.Environment)
}

func TestLoadSQSEvent(t *testing.T) {
	t.Parallel()
	fn, _ := loadClub(t).Function("NotifierFunction")
	require.Equal(t, []template.SQSEvent{{
		Name:                    "Notifications",
		QueueARN:                "arn:aws:sqs:us-east-1:000000000000:club-notifications",
		BatchSize:               25,
		MaximumBatchingWindow:   2 * time.Second,
		ReportBatchItemFailures: true,
		MaximumConcurrency:      5, // from a Number parameter
		Enabled:                 true,
		FilterCriteria: &template.FilterCriteria{Patterns: []string{
			`{"body":{"type":["enrollment.created"]}}`,
		}},
	}}, fn.SQSEvents)
}

func TestLoadDynamoDBEvent(t *testing.T) {
	t.Parallel()
	st := loadClub(t)
	fn, _ := st.Function("RelayFunction")
	require.Equal(t, []template.DynamoDBEvent{{
		Name:                  "Outbox",
		StreamARN:             st.Tables[1].StreamARN,
		StartingPosition:      "TRIM_HORIZON",
		BatchSize:             50,
		MaximumBatchingWindow: time.Second,
		FilterCriteria: &template.FilterCriteria{Patterns: []string{
			`{"eventName":["INSERT"]}`,
			`{"eventName":["MODIFY"]}`, // written as a YAML map
		}},
		BisectBatchOnFunctionError: true,
		MaximumRetryAttempts:       3,
		MaximumRecordAge:           time.Hour,
		OnFailureDestination:       "arn:aws:sqs:us-east-1:000000000000:club-notifications-dlq",
		OnFailureType:              "SQS",
		ReportBatchItemFailures:    true,
		ParallelizationFactor:      2,
		Enabled:                    true,
	}}, fn.DynamoDBEvents)
}

func TestLoadScheduleEvents(t *testing.T) {
	t.Parallel()
	st := loadClub(t)
	fn, _ := st.Function("NotifierFunction")
	require.Equal(t, []template.ScheduleEvent{
		{
			Name:        "Nightly",
			Kind:        "Schedule",
			Expression:  "rate(1 day)",
			Input:       `{"job":"digest"}`,
			Enabled:     false,
			RuleName:    "club-nightly",
			Description: "nightly digest",
		},
		{
			Name:       "Sweep",
			Kind:       "ScheduleV2",
			Expression: "cron(0/5 * * * ? *)",
			Timezone:   "Europe/Berlin",
			Input:      `{"job":"sweep"}`, // written as a YAML map
			Enabled:    true,
		},
	}, fn.Schedules)
	require.Equal(t, []template.ScheduleEvent{{
		Name: "Reconcile", Kind: "Schedule", Expression: "rate(15 minutes)", Enabled: true,
	}}, st.StateMachines[0].Schedules)
}

func TestLoadHTTPAPIs(t *testing.T) {
	t.Parallel()
	st := loadClub(t)
	cors := &template.CORS{
		AllowOrigins: []string{"*"},
		AllowMethods: []string{"GET", "POST"},
		MaxAge:       10 * time.Minute,
	}
	require.Equal(t, []template.HTTPAPI{
		{
			Source:    "ClubApi",
			ID:        "clubapi",
			Endpoint:  "https://clubapi.execute-api.us-east-1.amazonaws.com",
			StageName: "v1",
			Authorizers: map[string]template.JWTAuthorizer{"ClubJwt": {
				Issuer:         "https://issuer.example.com/",
				Audience:       []string{"club-api", "club-cli"},
				IdentitySource: "$request.header.Authorization",
			}},
			DefaultAuthorizer: "ClubJwt",
			CORS:              cors, // from Globals.HttpApi
		},
		{
			Source:    "ServerlessHttpApi", // implicit, for the event without ApiId
			ID:        "serverlesshttpapi",
			Endpoint:  "https://serverlesshttpapi.execute-api.us-east-1.amazonaws.com",
			StageName: "$default",
			CORS:      cors,
		},
	}, st.HTTPAPIs)

	api, _ := st.Function("ApiFunction")
	require.Equal(t, []template.HTTPAPIEvent{
		{
			Name: "Enroll", APISource: "ClubApi", APIID: "clubapi",
			Method: "POST", Path: "/classes/{class_id}/enrollments",
			Authorizer: "ClubJwt", AuthorizationScopes: []string{"enroll"},
			Timeout: 30 * time.Second, PayloadFormatVersion: "2.0",
		},
		{
			Name: "GetClass", APISource: "ClubApi", APIID: "clubapi",
			Method: "GET", Path: "/classes/{class_id}", // method upper-cased
			Authorizer: "ClubJwt", // the API's DefaultAuthorizer
			Timeout:    30 * time.Second, PayloadFormatVersion: "2.0",
		},
		{
			Name: "Health", APISource: "ClubApi", APIID: "clubapi",
			Method: "GET", Path: "/healthz",
			Authorizer: "", // Auth.Authorizer: NONE
			Timeout:    5 * time.Second, PayloadFormatVersion: "2.0",
		},
	}, api.HTTPAPIEvents)

	relay, _ := st.Function("RelayFunction")
	require.Equal(t, []template.HTTPAPIEvent{{
		Name: "Status", APISource: "ServerlessHttpApi", APIID: "serverlesshttpapi",
		Method: "GET", Path: "/status", Timeout: 30 * time.Second, PayloadFormatVersion: "2.0",
	}}, relay.HTTPAPIEvents)
}

func TestLoadStateMachine(t *testing.T) {
	t.Parallel()
	st := loadClub(t)
	require.Len(t, st.StateMachines, 1)
	sm := st.StateMachines[0]
	require.Equal(t, "PurchaseStateMachine", sm.Source)
	require.Equal(t, "club-purchase", sm.Name)
	require.Equal(t, "arn:aws:states:us-east-1:000000000000:stateMachine:club-purchase", sm.ARN)
	require.Equal(t, "STANDARD", sm.Type)
	require.Equal(t, filepath.Join(fixtureDir(t), "statemachines", "purchase.asl.json"), sm.DefinitionPath)
	require.Equal(t, map[string]string{
		"ReserveFunctionArn":    "arn:aws:lambda:us-east-1:000000000000:function:club-RelayFunction",
		"NotificationsQueueUrl": "http://127.0.0.1:4566/000000000000/club-notifications",
		"HoldSeconds":           "900",
	}, sm.Substitutions)

	var def struct {
		StartAt string
		States  map[string]struct {
			Seconds    int
			Parameters map[string]string
		}
	}
	require.NoError(t, json.Unmarshal(sm.Definition, &def))
	require.Equal(t, "Reserve", def.StartAt)
	require.Equal(t, sm.Substitutions["ReserveFunctionArn"], def.States["Reserve"].Parameters["FunctionName"])
	require.Equal(t, 900, def.States["Hold"].Seconds, "an unquoted placeholder becomes a JSON number")
	require.Equal(t, sm.Substitutions["NotificationsQueueUrl"], def.States["Notify"].Parameters["QueueUrl"])
	require.JSONEq(t, `[{"LambdaInvokePolicy":{"FunctionName":"club-RelayFunction"}}]`, string(sm.Policies))
}

func TestLoadAlarmsParametersLogGroups(t *testing.T) {
	t.Parallel()
	st := loadClub(t)
	require.Equal(t, []template.Alarm{{
		Source:             "DlqAlarm",
		Name:               "club-notifications-dlq-depth",
		ARN:                "arn:aws:cloudwatch:us-east-1:000000000000:alarm:club-notifications-dlq-depth",
		Description:        "The notifications DLQ has messages",
		Namespace:          "AWS/SQS",
		MetricName:         "ApproximateNumberOfMessagesVisible",
		Dimensions:         []template.Dimension{{Name: "QueueName", Value: "club-notifications-dlq"}},
		Statistic:          "Maximum",
		Period:             time.Minute,
		EvaluationPeriods:  1,
		Threshold:          0,
		ComparisonOperator: "GreaterThanThreshold",
		TreatMissingData:   "notBreaching",
		ActionsEnabled:     true,
		AlarmActions:       []string{"arn:aws:sns:us-east-1:000000000000:club-events"},
	}}, st.Alarms, "ProdOnlyAlarm's condition is false for Stage=dev")

	require.Equal(t, []template.SSMParameter{{
		Source: "ConfigParameter", Name: "/club/dev/config", Type: "String", Value: `{"table":"club-club"}`,
	}}, st.SSMParameters)

	require.Equal(t, []template.LogGroup{{
		Source:          "ApiLogs",
		Name:            "/aws/lambda/club-ApiFunction",
		ARN:             "arn:aws:logs:us-east-1:000000000000:log-group:/aws/lambda/club-ApiFunction:*",
		RetentionInDays: 14,
	}}, st.LogGroups)
}

func TestLoadOutputs(t *testing.T) {
	t.Parallel()
	st := loadClub(t)
	require.Equal(t, map[string]string{
		"ApiUrl":                  "https://clubapi.execute-api.us-east-1.amazonaws.com",
		"ImplicitApiId":           "serverlesshttpapi",
		"NotificationsQueueUrl":   "http://127.0.0.1:4566/000000000000/club-notifications",
		"PurchaseStateMachineArn": "arn:aws:states:us-east-1:000000000000:stateMachine:club-purchase",
		"OutboxStreamArn":         ddbstream.StreamARN("arn:aws:dynamodb:us-east-1:000000000000:table/club-OutboxTable"),
		"Audiences":               "club-api club-cli",
	}, st.Outputs, "ProdOnly is left out: its condition is false")
}

func TestLoadWithOptions(t *testing.T) {
	t.Parallel()
	st, err := template.Load(filepath.Join("testdata", "club", "template.yaml"), template.Options{
		StackName:  "prod-club",
		Region:     "eu-west-1",
		AccountID:  "123456789012",
		Endpoint:   "http://localhost:9999/",
		HTTPAPIURL: "http://127.0.0.1:3000",
		Parameters: map[string]string{"Stage": "prod", "NotifierConcurrency": "50"},
	})
	require.NoError(t, err)
	require.Equal(t, "prod-club-club", st.Tables[0].Name)
	require.Equal(t, "arn:aws:dynamodb:eu-west-1:123456789012:table/prod-club-club", st.Tables[0].ARN)
	q, _ := st.QueueByARN("arn:aws:sqs:eu-west-1:123456789012:club-notifications")
	require.NotNil(t, q)
	require.Equal(t, "http://localhost:9999/123456789012/club-notifications", q.URL)
	require.Equal(t, "http://127.0.0.1:3000", st.HTTPAPIs[0].Endpoint)
	fn, _ := st.Function("NotifierFunction")
	require.Equal(t, 50, fn.SQSEvents[0].MaximumConcurrency)
	require.Equal(t, "prod", fn.Environment["STAGE"])
	require.Len(t, st.Alarms, 2, "ProdOnlyAlarm exists for Stage=prod")
	require.Equal(t, "prod-club-ProdOnlyAlarm", st.Alarms[1].Name)
	require.Equal(t, "prod", st.Outputs["ProdOnly"])
	require.Equal(t, "/club/prod/config", st.SSMParameters[0].Name)
}

func TestParseIsDeterministic(t *testing.T) {
	t.Parallel()
	require.Equal(t, loadClub(t), loadClub(t))
}

func TestNoEchoParametersAreMarked(t *testing.T) {
	t.Parallel()
	st, err := template.Parse([]byte(`
Transform: AWS::Serverless-2016-10-31
Parameters:
  Secret: {Type: String, NoEcho: true, Default: s3cr3t}
  Quoted: {Type: String, NoEcho: "true", Default: x}
  Plain: {Type: String, Default: visible}
Resources:
  Q: {Type: AWS::SQS::Queue}
`), template.Options{})
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"Secret": true, "Quoted": true}, trueKeys(st.NoEchoParameters))
	require.Equal(t, "visible", st.Parameters["Plain"])
}

func trueKeys(m map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k, v := range m {
		if v {
			out[k] = true
		}
	}
	return out
}
