package template_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/template"
)

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		src     string
		opts    template.Options
		wantErr string
	}{
		{
			name:    "unsupported resource type",
			src:     "Resources:\n  Vpc:\n    Type: AWS::EC2::VPC\n",
			wantErr: "resource Vpc (AWS::EC2::VPC): unsupported resource type",
		},
		{
			name:    "unknown property",
			src:     "Resources:\n  NotificationsQueue:\n    Type: AWS::SQS::Queue\n    Properties: {Foo: 1}\n",
			wantErr: `resource NotificationsQueue (AWS::SQS::Queue): unsupported property "Foo"`,
		},
		{
			name:    "a property with behaviour the local cloud does not reproduce",
			src:     "Resources:\n  B:\n    Type: AWS::S3::Bucket\n    Properties: {NotificationConfiguration: {}}\n",
			wantErr: `resource B (AWS::S3::Bucket): unsupported property "NotificationConfiguration"`,
		},
		{
			name: "unknown property inside an event",
			src: `
Resources:
  Q: {Type: AWS::SQS::Queue}
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn
      Events:
        Jobs: {Type: SQS, Properties: {Queue: !GetAtt Q.Arn, TumblingWindowInSeconds: 30}}
`,
			wantErr: `resource Fn (AWS::Serverless::Function): event Jobs (SQS): unsupported property "TumblingWindowInSeconds"`,
		},
		{
			name: "unknown property inside a nested object",
			src: `
Resources:
  Q:
    Type: AWS::SQS::Queue
    Properties:
      RedrivePolicy: {deadLetterTargetArn: arn, maxReceiveCount: 3, maxRetries: 1}
`,
			wantErr: `resource Q (AWS::SQS::Queue): RedrivePolicy: unsupported property "maxRetries"`,
		},
		{
			name:    "unknown resource attribute",
			src:     "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Propertes: {}\n",
			wantErr: `resource Q: unsupported key "Propertes"`,
		},
		{
			name:    "unknown template section",
			src:     "Resource:\n  Q: {Type: AWS::SQS::Queue}\n",
			wantErr: `template: unsupported key "Resource"`,
		},
		{
			name:    "wrong type",
			src:     "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {VisibilityTimeout: soon}\n",
			wantErr: `resource Q (AWS::SQS::Queue): property "VisibilityTimeout": expected an integer, got "soon"`,
		},
		{
			name: "wrong type in a nested object",
			src: `
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: x
      Events:
        Q: {Type: SQS, Properties: {Queue: arn, ScalingConfig: {MaximumConcurrency: many}}}
`,
			wantErr: `event Q (SQS): property "ScalingConfig.MaximumConcurrency": expected an integer, got "many"`,
		},
		{
			name:    "a list where text is expected",
			src:     "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: [a]}\n",
			wantErr: `resource Q (AWS::SQS::Queue): property "QueueName": expected a string, got a list`,
		},
		{
			name:    "parameter with no value",
			src:     "Parameters:\n  Issuer: {Type: String}\nResources:\n  Q: {Type: AWS::SQS::Queue}\n",
			wantErr: "parameter Issuer: no value (no Default and no override)",
		},
		{
			name:    "override of an undeclared parameter",
			src:     "Resources:\n  Q: {Type: AWS::SQS::Queue}\n",
			opts:    template.Options{Parameters: map[string]string{"Stag": "prod"}},
			wantErr: "parameter Stag: not declared in the template",
		},
		{
			name:    "Ref to nothing",
			src:     "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: !Ref Nope}\n",
			wantErr: `resource Q (AWS::SQS::Queue): property "QueueName": Ref: unknown parameter or resource "Nope"`,
		},
		{
			name:    "GetAtt of an unknown attribute",
			src:     "Resources:\n  Q: {Type: AWS::SQS::Queue}\n  T:\n    Type: AWS::SNS::Topic\n    Properties: {DisplayName: !GetAtt Q.Url}\n",
			wantErr: `resource T (AWS::SNS::Topic): Fn::GetAtt: resource Q (AWS::SQS::Queue) has no attribute "Url"`,
		},
		{
			name: "StreamArn of a table without a stream",
			src: `
Resources:
  T:
    Type: AWS::DynamoDB::Table
    Properties: {KeySchema: [{AttributeName: id, KeyType: HASH}]}
Outputs:
  S: {Value: !GetAtt T.StreamArn}
`,
			wantErr: `output S: Fn::GetAtt: resource T (AWS::DynamoDB::Table) has no attribute "StreamArn"`,
		},
		{
			name: "names that depend on each other",
			src: `
Resources:
  A: {Type: AWS::SQS::Queue, Properties: {QueueName: !GetAtt B.QueueName}}
  B: {Type: AWS::SQS::Queue, Properties: {QueueName: !GetAtt A.QueueName}}
`,
			wantErr: "the name of resource A depends on itself",
		},
		{
			name:    "unsupported intrinsic",
			src:     "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: !ImportValue shared}\n",
			wantErr: `resource Q (AWS::SQS::Queue): property "QueueName": Fn::ImportValue: not supported by the local cloud`,
		},
		{
			name:    "unknown condition",
			src:     "Resources:\n  Q: {Type: AWS::SQS::Queue, Condition: Nope}\n",
			wantErr: `resource Q (AWS::SQS::Queue): unknown condition "Nope"`,
		},
		{
			name:    "unknown Globals property",
			src:     "Globals:\n  Function: {Timeout: 3, Colour: red}\nResources:\n  Q: {Type: AWS::SQS::Queue}\n",
			wantErr: `Globals.Function: unsupported property "Colour"`,
		},
		{
			name:    "a per-function property in Globals",
			src:     "Globals:\n  Function: {FunctionName: shared}\nResources:\n  Q: {Type: AWS::SQS::Queue}\n",
			wantErr: `Globals.Function: property "FunctionName" cannot be global`,
		},
		{
			name:    "Ref to a resource of an unsupported type",
			src:     "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties: {QueueName: !Ref Role}\n  Role: {Type: AWS::EC2::VPC}\n",
			wantErr: `resource Q (AWS::SQS::Queue): property "QueueName": Ref: resource Role (AWS::EC2::VPC): unsupported resource type`,
		},
		{
			name:    "unsupported Globals section",
			src:     "Globals:\n  Api: {Name: x}\nResources:\n  Q: {Type: AWS::SQS::Queue}\n",
			wantErr: "Globals.Api: unsupported section (supported: Function, HttpApi)",
		},
		{
			name:    "function without code",
			src:     "Resources:\n  Fn: {Type: AWS::Serverless::Function, Properties: {Handler: bootstrap}}\n",
			wantErr: "resource Fn (AWS::Serverless::Function): CodeUri is required (a local directory)",
		},
		{
			name:    "unsupported event type",
			src:     "Resources:\n  Fn: {Type: AWS::Serverless::Function, Properties: {CodeUri: x, Events: {E: {Type: Kinesis}}}}\n",
			wantErr: "resource Fn (AWS::Serverless::Function): event E (Kinesis): unsupported event type",
		},
		{
			name: "invalid starting position",
			src: `
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: x
      Events:
        S: {Type: DynamoDB, Properties: {Stream: arn, StartingPosition: AT_TIMESTAMP}}
`,
			wantErr: `resource Fn (AWS::Serverless::Function): event S (DynamoDB): StartingPosition "AT_TIMESTAMP": expected TRIM_HORIZON or LATEST`,
		},
		{
			name: "unknown function response type",
			src: `
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: x
      Events:
        Q: {Type: SQS, Properties: {Queue: arn, FunctionResponseTypes: [ReportItemFailures]}}
`,
			wantErr: `resource Fn (AWS::Serverless::Function): event Q (SQS): FunctionResponseTypes: unsupported value "ReportItemFailures" (only ReportBatchItemFailures)`,
		},
		{
			name: "SQS batch above 10 without a batching window",
			src: `
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: x
      Events:
        Q: {Type: SQS, Properties: {Queue: arn, BatchSize: 100}}
`,
			wantErr: "resource Fn (AWS::Serverless::Function): event Q (SQS): BatchSize 100: above 10 needs MaximumBatchingWindowInSeconds",
		},
		{
			name: "HttpApi event naming an unknown authorizer",
			src: `
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: x
      Events:
        Get: {Type: HttpApi, Properties: {Path: /x, Method: GET, Auth: {Authorizer: Jwt}}}
`,
			wantErr: "resource Fn (AWS::Serverless::Function): event Get (HttpApi): Auth.Authorizer Jwt is not an authorizer of ServerlessHttpApi",
		},
		{
			name: "HttpApi event naming an unknown API",
			src: `
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: x
      Events:
        Get: {Type: HttpApi, Properties: {ApiId: elsewhere, Path: /x, Method: GET}}
`,
			wantErr: `resource Fn (AWS::Serverless::Function): event Get (HttpApi): ApiId "elsewhere" names no HTTP API of the template`,
		},
		{
			name:    "state machine definition file missing",
			src:     "Resources:\n  M: {Type: AWS::Serverless::StateMachine, Properties: {DefinitionUri: nowhere.asl.json}}\n",
			opts:    template.Options{Dir: "/nonexistent"},
			wantErr: "resource M (AWS::Serverless::StateMachine): DefinitionUri: open /nonexistent/nowhere.asl.json: no such file or directory",
		},
		{
			name:    "a Number parameter below its MinValue",
			src:     "Parameters:\n  N: {Type: Number, Default: 5, MinValue: 10, MaxValue: 20}\nResources:\n  Q: {Type: AWS::SQS::Queue}\n",
			wantErr: "parameter N: value 5 is below MinValue 10",
		},
		{
			name:    "a Number parameter above its MaxValue",
			src:     "Parameters:\n  N: {Type: Number, Default: 5, MaxValue: 4}\nResources:\n  Q: {Type: AWS::SQS::Queue}\n",
			wantErr: "parameter N: value 5 is above MaxValue 4",
		},
		{
			name:    "a Number parameter that is not a number",
			src:     "Parameters:\n  N: {Type: Number}\nResources:\n  Q: {Type: AWS::SQS::Queue}\n",
			opts:    template.Options{Parameters: map[string]string{"N": "ten"}},
			wantErr: `parameter N: value "ten" is not a number`,
		},
		{
			name:    "no resources",
			src:     "Description: empty\n",
			wantErr: "template: no Resources",
		},
		{
			name:    "malformed YAML",
			src:     "Resources: [\n",
			wantErr: "parse template: invalid YAML template",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, err := template.Parse([]byte(tc.src), tc.opts)
			require.Error(t, err)
			require.Nil(t, st)
			require.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	t.Parallel()
	_, err := template.Load("testdata/does-not-exist.yaml", template.Options{})
	require.ErrorContains(t, err, "read template: open testdata/does-not-exist.yaml")
}
