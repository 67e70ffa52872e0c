package template_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/template"
)

// intrinsicsTemplate declares one resource of each type and resolves the
// expression under test as the output Out.
const intrinsicsTemplate = `
Transform: AWS::Serverless-2016-10-31
Parameters:
  Stage: {Type: String, Default: dev}
  Size: {Type: Number, Default: 3}
  Zones: {Type: CommaDelimitedList, Default: "a, b,c"}
Mappings:
  StageConfig:
    dev: {Memory: 256, Name: development}
    prod: {Memory: 1024, Name: production}
Conditions:
  IsDev: !Equals [!Ref Stage, dev]
  IsProd: !Equals [prod, !Ref Stage]
  NotProd: !Not [{Condition: IsProd}]
  NotProdShort: !Not [!Condition IsProd]
  DevAndNotProd: !And [{Condition: IsDev}, {Condition: NotProd}]
  ProdOrSizeThree: !Or [{Condition: IsProd}, !Equals [!Ref Size, 3]]
  AllThree: !And [{Condition: IsDev}, {Condition: IsProd}, {Condition: NotProd}]
Resources:
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      KeySchema: [{AttributeName: id, KeyType: HASH}]
      AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
      StreamSpecification: {StreamViewType: NEW_IMAGE}
  Queue:
    Type: AWS::SQS::Queue
  Topic:
    Type: AWS::SNS::Topic
  Bucket:
    Type: AWS::S3::Bucket
  Fn:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: fn, Handler: bootstrap, Runtime: provided.al2023}
  Machine:
    Type: AWS::Serverless::StateMachine
    Properties:
      Definition: {StartAt: A, States: {A: {Type: Succeed}}}
  Api:
    Type: AWS::Serverless::HttpApi
  Param:
    Type: AWS::SSM::Parameter
    Properties: {Type: String, Value: hello}
  Alarm:
    Type: AWS::CloudWatch::Alarm
    Properties: {EvaluationPeriods: 1, ComparisonOperator: GreaterThanThreshold, Threshold: 1}
  Logs:
    Type: AWS::Logs::LogGroup
Outputs:
  Out:
    Value: %s
`

func TestIntrinsics(t *testing.T) {
	t.Parallel()
	const arnPrefix = "arn:aws:%s:us-east-1:000000000000:"
	tests := []struct {
		name string
		expr string
		want string
	}{
		{"Ref parameter", "!Ref Stage", "dev"},
		{"Ref number parameter", "!Ref Size", "3"},
		{"Ref list parameter is trimmed", `!Join ["|", !Ref Zones]`, "a|b|c"},
		{"Ref AWS::Region", "!Ref AWS::Region", "us-east-1"},
		{"Ref AWS::AccountId", "!Ref AWS::AccountId", "000000000000"},
		{"Ref AWS::StackName", "!Ref AWS::StackName", "club"},
		{"Ref AWS::Partition", "!Ref AWS::Partition", "aws"},
		{"Ref AWS::URLSuffix", "!Ref AWS::URLSuffix", "amazonaws.com"},
		{"Ref AWS::StackId", "!Ref AWS::StackId", "arn:aws:cloudformation:us-east-1:000000000000:stack/club/00000000-0000-0000-0000-000000000000"},
		{"Ref table is its name", "!Ref Table", "club-Table"},
		{"Ref queue is its URL", "!Ref Queue", "http://127.0.0.1:4566/000000000000/club-Queue"},
		{"Ref topic is its ARN", "!Ref Topic", fmt.Sprintf(arnPrefix, "sns") + "club-Topic"},
		{"Ref bucket is its name", "!Ref Bucket", "club-bucket"},
		{"Ref function is its name", "!Ref Fn", "club-Fn"},
		{"Ref state machine is its ARN", "!Ref Machine", fmt.Sprintf(arnPrefix, "states") + "stateMachine:club-Machine"},
		{"Ref HTTP API is its id", "!Ref Api", "api"},
		{"Ref SSM parameter is its name", "!Ref Param", "club-Param"},
		{"Ref alarm is its name", "!Ref Alarm", "club-Alarm"},
		{"Ref log group is its name", "!Ref Logs", "club-Logs"},
		{"long-form Ref", "{Ref: Stage}", "dev"},
		{"GetAtt table Arn", "!GetAtt Table.Arn", fmt.Sprintf(arnPrefix, "dynamodb") + "table/club-Table"},
		{"GetAtt table StreamArn", "!GetAtt Table.StreamArn", fmt.Sprintf(arnPrefix, "dynamodb") + "table/club-Table/stream/2026-01-01T00:00:00.000"},
		{"GetAtt queue Arn", "!GetAtt Queue.Arn", fmt.Sprintf(arnPrefix, "sqs") + "club-Queue"},
		{"GetAtt queue QueueName", "!GetAtt Queue.QueueName", "club-Queue"},
		{"GetAtt queue QueueUrl", "!GetAtt Queue.QueueUrl", "http://127.0.0.1:4566/000000000000/club-Queue"},
		{"GetAtt topic TopicName", "!GetAtt Topic.TopicName", "club-Topic"},
		{"GetAtt topic TopicArn", "!GetAtt Topic.TopicArn", fmt.Sprintf(arnPrefix, "sns") + "club-Topic"},
		{"GetAtt bucket Arn", "!GetAtt Bucket.Arn", "arn:aws:s3:::club-bucket"},
		{"GetAtt bucket DomainName", "!GetAtt Bucket.DomainName", "club-bucket.s3.amazonaws.com"},
		{"GetAtt bucket RegionalDomainName", "!GetAtt Bucket.RegionalDomainName", "club-bucket.s3.us-east-1.amazonaws.com"},
		{"GetAtt function Arn", "!GetAtt Fn.Arn", fmt.Sprintf(arnPrefix, "lambda") + "function:club-Fn"},
		{"GetAtt state machine Name", "!GetAtt Machine.Name", "club-Machine"},
		{"GetAtt state machine Arn", "!GetAtt Machine.Arn", fmt.Sprintf(arnPrefix, "states") + "stateMachine:club-Machine"},
		{"GetAtt HTTP API ApiEndpoint", "!GetAtt Api.ApiEndpoint", "https://api.execute-api.us-east-1.amazonaws.com"},
		{"GetAtt SSM parameter Value", "!GetAtt Param.Value", "hello"},
		{"GetAtt alarm Arn", "!GetAtt Alarm.Arn", fmt.Sprintf(arnPrefix, "cloudwatch") + "alarm:club-Alarm"},
		{"GetAtt log group Arn", "!GetAtt Logs.Arn", fmt.Sprintf(arnPrefix, "logs") + "log-group:club-Logs:*"},
		{"long-form GetAtt", "{Fn::GetAtt: [Queue, Arn]}", fmt.Sprintf(arnPrefix, "sqs") + "club-Queue"},
		{"Sub with pseudo parameters", `!Sub "${AWS::StackName}-${AWS::Region}-${Stage}"`, "club-us-east-1-dev"},
		{"Sub with resource attributes", `!Sub "${Queue.QueueName}@${Table}"`, "club-Queue@club-Table"},
		{"Sub with a variable map", `!Sub ["${Greeting}, ${Stage}", {Greeting: !GetAtt Param.Value}]`, "hello, dev"},
		{"Sub keeps ${!Literal}", `!Sub "${!NotAVariable}-${Stage}"`, "${NotAVariable}-dev"},
		{"Join", `!Join [":", [a, !Ref Stage, 7]]`, "a:dev:7"},
		{"Select", `!Select [1, [x, y, z]]`, "y"},
		{"Select with a string index", `!Select ["2", !Ref Zones]`, "c"},
		{"Split then Select", `!Select [1, !Split ["/", "a/b/c"]]`, "b"},
		{"Base64", `!Base64 "hi"`, "aGk="},
		{"FindInMap", `!FindInMap [StageConfig, !Ref Stage, Name]`, "development"},
		{"GetAZs", `!Select [0, !GetAZs ""]`, "us-east-1a"},
		{"If true branch", `!If [IsDev, yes, no]`, "yes"},
		{"If false branch", `!If [IsProd, yes, no]`, "no"},
		{"Not", `!If [NotProd, yes, no]`, "yes"},
		{"Not with short-form Condition", `!If [NotProdShort, yes, no]`, "yes"},
		{"And", `!If [DevAndNotProd, yes, no]`, "yes"},
		{"And with a false operand", `!If [AllThree, yes, no]`, "no"},
		{"Or compares numbers as strings", `!If [ProdOrSizeThree, yes, no]`, "yes"},
		{"nested intrinsics", `!Join ["", [!Sub "${Stage}-", !Select [0, !Split [",", !Sub "${Queue.QueueName},x"]]]]`, "dev-club-Queue"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, err := template.Parse([]byte(fmt.Sprintf(intrinsicsTemplate, tc.expr)), template.Options{})
			require.NoError(t, err)
			require.Equal(t, tc.want, st.Outputs["Out"])
		})
	}
}

func TestNoValueRemovesTheProperty(t *testing.T) {
	t.Parallel()
	src := `
Parameters:
  Stage: {Type: String, Default: dev}
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn
      ReservedConcurrentExecutions: !If [IsProd, 50, !Ref AWS::NoValue]
      Architectures: [!If [IsProd, arm64, !Ref AWS::NoValue], x86_64]
      Description: !If [IsProd, !Ref AWS::NoValue, development]
`
	st, err := template.Parse([]byte(src), template.Options{})
	require.NoError(t, err)
	fn := st.Functions[0]
	require.Nil(t, fn.ReservedConcurrency, "NoValue leaves the property unset")
	require.Equal(t, []string{"x86_64"}, fn.Architectures, "NoValue drops the list element")
	require.Equal(t, "development", fn.Description)

	st, err = template.Parse([]byte(src), template.Options{Parameters: map[string]string{"Stage": "prod"}})
	require.NoError(t, err)
	fn = st.Functions[0]
	require.Equal(t, 50, *fn.ReservedConcurrency)
	require.Equal(t, []string{"arm64", "x86_64"}, fn.Architectures)
	require.Empty(t, fn.Description)
}

func TestJSONTemplate(t *testing.T) {
	t.Parallel()
	src := `{
  "Resources": {
    "Queue": {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": "45"}},
    "Fn": {"Type": "AWS::Serverless::Function", "Properties": {
      "CodeUri": "fn",
      "Environment": {"Variables": {"QUEUE": {"Fn::GetAtt": ["Queue", "Arn"]}, "URL": {"Ref": "Queue"}}}
    }}
  }
}`
	st, err := template.Parse([]byte(src), template.Options{})
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"QUEUE": "arn:aws:sqs:us-east-1:000000000000:club-Queue",
		"URL":   "http://127.0.0.1:4566/000000000000/club-Queue",
	}, st.Functions[0].Environment)
	require.Equal(t, "45s", st.Queues[0].VisibilityTimeout.String())
}

func TestNamesResolveInAnyOrder(t *testing.T) {
	t.Parallel()
	// A's name depends on B's, declared after it; both are known before
	// anything is created.
	src := `
Resources:
  A:
    Type: AWS::SQS::Queue
    Properties: {QueueName: !Sub "${B}-a"}
  B:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: !Join ["-", [!Ref AWS::StackName, b]]
      KeySchema: [{AttributeName: id, KeyType: HASH}]
      AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
`
	st, err := template.Parse([]byte(src), template.Options{StackName: "s"})
	require.NoError(t, err)
	require.Equal(t, "s-b-a", st.Queues[0].Name)
	require.Equal(t, "s-b", st.Tables[0].Name)
}

func TestPhysicalNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		resource string
		want     func(*template.Stack) string
		expected string
	}{
		{"explicit table name", "Type: AWS::DynamoDB::Table\n    Properties: {TableName: t1, KeySchema: [{AttributeName: id, KeyType: HASH}]}",
			func(s *template.Stack) string { return s.Tables[0].Name }, "t1"},
		{"generated table name", "Type: AWS::DynamoDB::Table\n    Properties: {KeySchema: [{AttributeName: id, KeyType: HASH}]}",
			func(s *template.Stack) string { return s.Tables[0].Name }, "stk-Res"},
		{"explicit queue name", "Type: AWS::SQS::Queue\n    Properties: {QueueName: q1}",
			func(s *template.Stack) string { return s.Queues[0].Name }, "q1"},
		{"generated FIFO queue name", "Type: AWS::SQS::Queue\n    Properties: {FifoQueue: true}",
			func(s *template.Stack) string { return s.Queues[0].Name }, "stk-Res.fifo"},
		{"explicit topic name", "Type: AWS::SNS::Topic\n    Properties: {TopicName: t}",
			func(s *template.Stack) string { return s.Topics[0].Name }, "t"},
		{"generated FIFO topic name", "Type: AWS::SNS::Topic\n    Properties: {FifoTopic: true}",
			func(s *template.Stack) string { return s.Topics[0].Name }, "stk-Res.fifo"},
		{"explicit bucket name keeps its case rules", "Type: AWS::S3::Bucket\n    Properties: {BucketName: my-bucket}",
			func(s *template.Stack) string { return s.Buckets[0].Name }, "my-bucket"},
		{"generated bucket name is lower case", "Type: AWS::S3::Bucket",
			func(s *template.Stack) string { return s.Buckets[0].Name }, "stk-res"},
		{"explicit function name", "Type: AWS::Serverless::Function\n    Properties: {CodeUri: x, FunctionName: f}",
			func(s *template.Stack) string { return s.Functions[0].Name }, "f"},
		{"explicit state machine name", "Type: AWS::Serverless::StateMachine\n    Properties: {Name: m, Definition: {StartAt: A, States: {A: {Type: Succeed}}}}",
			func(s *template.Stack) string { return s.StateMachines[0].ARN }, "arn:aws:states:us-east-1:000000000000:stateMachine:m"},
		{"HTTP API id", "Type: AWS::Serverless::HttpApi",
			func(s *template.Stack) string { return s.HTTPAPIs[0].ID }, "res"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := "Resources:\n  Res:\n    " + tc.resource + "\n"
			st, err := template.Parse([]byte(src), template.Options{StackName: "stk"})
			require.NoError(t, err)
			require.Equal(t, tc.expected, tc.want(st))
		})
	}
}

func TestParameters(t *testing.T) {
	t.Parallel()
	src := `
Parameters:
  Stage: {Type: String, AllowedValues: [dev, prod]}
  Retention: {Type: Number, Default: 60}
  Names: {Type: CommaDelimitedList, Default: [x, y]}
Resources:
  Q:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: !Sub "q-${Stage}"
      MessageRetentionPeriod: !Ref Retention
`
	st, err := template.Parse([]byte(src), template.Options{Parameters: map[string]string{"Stage": "prod"}})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"Stage": "prod", "Retention": "60", "Names": "x,y"}, st.Parameters)
	require.Equal(t, "q-prod", st.Queues[0].Name)
	require.Equal(t, "1m0s", st.Queues[0].MessageRetentionPeriod.String())

	_, err = template.Parse([]byte(src), template.Options{Parameters: map[string]string{"Stage": "qa"}})
	require.ErrorContains(t, err, `parameter Stage: value "qa" is not among AllowedValues`)
}

func TestGlobalsMerge(t *testing.T) {
	t.Parallel()
	src := `
Globals:
  Function:
    Timeout: 10
    MemorySize: 512
    Architectures: [arm64]
    Environment:
      Variables: {A: global-a, B: global-b}
Resources:
  Plain:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: p}
  Custom:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: c
      Timeout: 20
      Architectures: [x86_64]
      Environment:
        Variables: {B: local-b, C: local-c}
`
	st, err := template.Parse([]byte(src), template.Options{})
	require.NoError(t, err)
	custom, _ := st.Function("Custom")
	plain, _ := st.Function("Plain")

	require.Equal(t, "10s", plain.Timeout.String())
	require.Equal(t, 512, plain.MemorySize)
	require.Equal(t, []string{"arm64"}, plain.Architectures)
	require.Equal(t, map[string]string{"A": "global-a", "B": "global-b"}, plain.Environment)

	require.Equal(t, "20s", custom.Timeout.String(), "a scalar in the function replaces the global one")
	require.Equal(t, 512, custom.MemorySize)
	require.Equal(t, map[string]string{"A": "global-a", "B": "local-b", "C": "local-c"}, custom.Environment,
		"maps merge key by key")
	require.Equal(t, []string{"arm64", "x86_64"}, custom.Architectures, "SAM appends local list entries to global ones")
}

func TestFunctionAndEventDefaults(t *testing.T) {
	t.Parallel()
	src := `
Resources:
  Q:
    Type: AWS::SQS::Queue
  T:
    Type: AWS::DynamoDB::Table
    Properties:
      KeySchema: [{AttributeName: id, KeyType: HASH}]
      StreamSpecification: {StreamViewType: KEYS_ONLY}
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: /abs/fn
      Events:
        FromQueue: {Type: SQS, Properties: {Queue: !GetAtt Q.Arn}}
        FromStream: {Type: DynamoDB, Properties: {Stream: !GetAtt T.StreamArn, StartingPosition: LATEST}}
        Everything: {Type: HttpApi}
        Tick: {Type: Schedule, Properties: {Schedule: rate(1 minute)}}
`
	st, err := template.Parse([]byte(src), template.Options{})
	require.NoError(t, err)
	fn := st.Functions[0]
	require.Equal(t, "/abs/fn", fn.CodeDir)
	require.Equal(t, 128, fn.MemorySize)
	require.Equal(t, "3s", fn.Timeout.String())
	require.Equal(t, []string{"x86_64"}, fn.Architectures)
	require.Empty(t, fn.Environment)

	require.Equal(t, []template.SQSEvent{{
		Name: "FromQueue", QueueARN: st.Queues[0].ARN, BatchSize: 10, Enabled: true,
	}}, fn.SQSEvents)
	require.Equal(t, []template.DynamoDBEvent{{
		Name: "FromStream", StreamARN: st.Tables[0].StreamARN, StartingPosition: "LATEST",
		BatchSize: 100, MaximumRetryAttempts: -1, ParallelizationFactor: 1, Enabled: true,
	}}, fn.DynamoDBEvents)
	require.Equal(t, []template.HTTPAPIEvent{{
		Name: "Everything", APISource: "ServerlessHttpApi", APIID: "serverlesshttpapi",
		Method: "ANY", Path: "$default", Timeout: 30_000_000_000, PayloadFormatVersion: "2.0",
	}}, fn.HTTPAPIEvents)
	require.Equal(t, []template.ScheduleEvent{{
		Name: "Tick", Kind: "Schedule", Expression: "rate(1 minute)", Enabled: true,
	}}, fn.Schedules)
}

func TestStateMachineDefinitions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "flow.asl.yaml", "StartAt: Send\nStates:\n  Send:\n    Type: Task\n    Resource: ${Fn}\n    End: true\n")
	src := `
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: fn}
  Inline:
    Type: AWS::Serverless::StateMachine
    Properties:
      Type: EXPRESS
      Definition:
        StartAt: Call
        States:
          Call: {Type: Task, Resource: "${FnArn}", End: true}
      DefinitionSubstitutions:
        FnArn: !GetAtt Fn.Arn
  FromYAML:
    Type: AWS::Serverless::StateMachine
    Properties:
      DefinitionUri: flow.asl.yaml
      DefinitionSubstitutions: {Fn: !GetAtt Fn.Arn}
`
	st, err := template.Parse([]byte(src), template.Options{Dir: dir})
	require.NoError(t, err)
	fnARN := "arn:aws:lambda:us-east-1:000000000000:function:club-Fn"
	require.Equal(t, "FromYAML", st.StateMachines[0].Source)
	require.JSONEq(t, `{"StartAt":"Send","States":{"Send":{"Type":"Task","Resource":"`+fnARN+`","End":true}}}`,
		string(st.StateMachines[0].Definition))
	require.Equal(t, "Inline", st.StateMachines[1].Source)
	require.Equal(t, "EXPRESS", st.StateMachines[1].Type)
	require.Empty(t, st.StateMachines[1].DefinitionPath)
	require.JSONEq(t, `{"StartAt":"Call","States":{"Call":{"Type":"Task","Resource":"`+fnARN+`","End":true}}}`,
		string(st.StateMachines[1].Definition))
}

// TestEveryPlaceholderHasASubstitution is the cheap check that catches the
// commonest deploy break: an ASL ${Name} with no DefinitionSubstitutions
// entry.
func TestEveryPlaceholderHasASubstitution(t *testing.T) {
	t.Parallel()
	src := `
Resources:
  M:
    Type: AWS::Serverless::StateMachine
    Properties:
      Definition: {StartAt: A, States: {A: {Type: Task, Resource: "${Missing}", Next: B}, B: {Type: Task, Resource: "${Known}", End: true}}}
      DefinitionSubstitutions: {Known: x}
`
	_, err := template.Parse([]byte(src), template.Options{})
	require.EqualError(t, err, "resource M (AWS::Serverless::StateMachine): definition uses ${Missing} but DefinitionSubstitutions has no such entry")
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
}

func TestTransformMustBeSAM(t *testing.T) {
	t.Parallel()
	_, err := template.Parse([]byte("Transform: [AWS::Serverless-2016-10-31, AWS::LanguageExtensions]\nResources:\n  Q: {Type: AWS::SQS::Queue}\n"), template.Options{})
	require.ErrorContains(t, err, "unsupported Transform AWS::LanguageExtensions")
	require.True(t, strings.HasPrefix(err.Error(), "template:"))
}
