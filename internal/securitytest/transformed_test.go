package securitytest_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/securitytest"
)

// templateFlag points the transformed-template tests at another SAM
// template, e.g. an earlier version of infra/template.yaml:
//
//	git show main:infra/template.yaml > old.yaml
//	go test -run 'TestTransformed' ./internal/securitytest/ -args -securitytest.template "$PWD/old.yaml"
//
// The template's directory needs infra/sam-transform.py next to it; the
// flag's file is copied beside the real one for the run.
var templateFlag = flag.String("securitytest.template", "", "SAM template to transform instead of infra/template.yaml")

var transformed struct {
	once sync.Once
	cfn  *securitytest.CFN
	err  error
}

func infraPath() string {
	dir, err := os.Getwd() // a test runs in its package's directory
	if err != nil {
		panic(err)
	}
	return filepath.Join(dir, "..", "..", "infra", "template.yaml")
}

// transformInfra is infra/template.yaml after the SAM transform, computed
// once for the package's tests.
func transformInfra(t *testing.T) *securitytest.CFN {
	t.Helper()
	transformed.once.Do(func() {
		path := infraPath()
		if *templateFlag != "" {
			src, err := os.ReadFile(*templateFlag)
			if err != nil {
				transformed.err = err
				return
			}
			tmp, err := os.CreateTemp(filepath.Dir(path), ".other-*.yaml")
			if err != nil {
				transformed.err = err
				return
			}
			defer os.Remove(tmp.Name())
			if _, err := tmp.Write(src); err != nil {
				transformed.err = err
				return
			}
			tmp.Close()
			path = tmp.Name()
		}
		transformed.cfn, transformed.err = securitytest.Transform(context.Background(), path)
	})
	require.NoError(t, transformed.err)
	return transformed.cfn
}

// transformSnippet transforms a small SAM template written for one test.
func transformSnippet(t *testing.T, src string) *securitytest.CFN {
	t.Helper()
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join(filepath.Dir(infraPath()), "sam-transform.py"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sam-transform.py"), script, 0o755))
	path := filepath.Join(dir, "template.yaml")
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	cfn, err := securitytest.Transform(context.Background(), path)
	require.NoError(t, err)
	return cfn
}

// The roles AWS will create, SAM's generated ones with the managed policies
// it attaches included, grant no wildcard on a data service.
func TestTransformedTemplateRolesGrantLeastPrivilege(t *testing.T) {
	t.Parallel()
	cfn := transformInfra(t)
	roles := cfn.OfType("AWS::IAM::Role")
	require.NotEmpty(t, roles)
	for _, id := range cfn.OfType("AWS::Lambda::Function") {
		require.Contains(t, cfn.Resources[id].Properties, "Role", id)
	}
	require.Empty(t, problems(securitytest.GeneratedRoles(cfn)))
}

func TestGeneratedRolesFindsTheManagedPoliciesSAMAttaches(t *testing.T) {
	t.Parallel()
	cfn := transformSnippet(t, `
Transform: AWS::Serverless-2016-10-31
Conditions:
  Never: !Equals [a, b]
Resources:
  Jobs: {Type: AWS::SQS::Queue}
  Files: {Type: AWS::S3::Bucket}
  Outbox:
    Type: AWS::DynamoDB::Table
    Properties:
      KeySchema: [{AttributeName: pk, KeyType: HASH}]
      AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
      BillingMode: PAY_PER_REQUEST
      StreamSpecification: {StreamViewType: NEW_IMAGE}
  Consumer:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn
      Runtime: provided.al2023
      Handler: bootstrap
      Policies:
        - Statement:
            - {Effect: Allow, Action: [s3:GetObject], Resource: !Sub "${Files.Arn}/exports/*"}
            - {Effect: Allow, Action: [s3:GetObject], Resource: !Sub "${Files.Arn}/*"}
      Events:
        Jobs: {Type: SQS, Properties: {Queue: !GetAtt Jobs.Arn}}
  Relay:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn
      Runtime: provided.al2023
      Handler: bootstrap
      Role: !GetAtt RelayRole.Arn
      Events:
        Stream: {Type: DynamoDB, Properties: {Stream: !GetAtt Outbox.StreamArn, StartingPosition: TRIM_HORIZON}}
  RelayRole:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument:
        Statement: [{Effect: Allow, Principal: {Service: lambda.amazonaws.com}, Action: sts:AssumeRole}]
      ManagedPolicyArns: [arn:aws:iam::aws:policy/AdministratorAccess]
      Policies:
        - PolicyName: stream
          PolicyDocument:
            Statement:
              - {Effect: Allow, Action: [dynamodb:GetRecords, dynamodb:ListStreams], Resource: !Sub "${Outbox.Arn}/stream/*"}
              - {Effect: Allow, Action: ["dynamodb:Get*"], Resource: !Sub "${Outbox.Arn}"}
              - {Effect: Allow, Action: [sqs:SendMessage], Resource: !Sub "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:*"}
              - !If [Never, {Effect: Allow, Action: [sns:Publish], Resource: "*"}, !Ref AWS::NoValue]
`)
	require.Equal(t, []string{
		`ConsumerRole: managed policy AWSLambdaSQSQueueExecutionRole statement 1: wildcard resource "*" on a data service`,
		`ConsumerRole: policy ConsumerRolePolicy0 statement 2: wildcard resource "{Files.Arn}/*" on a data service`,
		"RelayRole: managed policy arn:aws:iam::aws:policy/AdministratorAccess cannot be checked: its statements are unknown to this check",
		`RelayRole: policy stream statement 2: wildcard action "dynamodb:Get*" on a data service`,
		`RelayRole: policy stream statement 3: wildcard resource "arn:{AWS::Partition}:sqs:{AWS::Region}:{AWS::AccountId}:*" on a data service`,
		`RelayRole: policy stream statement 4: wildcard resource "*" on a data service`,
	}, problems(securitytest.GeneratedRoles(cfn)))
}

// Every function logs to its own log group, which has a retention.
func TestTransformedTemplateFunctionsLogWithRetention(t *testing.T) {
	t.Parallel()
	cfn := transformInfra(t)
	require.Len(t, cfn.OfType("AWS::Lambda::Function"), 9)
	require.Empty(t, problems(securitytest.FunctionLogs(cfn)))
	retention := cfn.Parameters["LogRetentionDays"]
	require.NotNil(t, retention, "the retention is a parameter")
	require.Contains(t, retention["AllowedValues"], retention["Default"])
}

func TestFunctionLogsFindsGroupsWithoutRetention(t *testing.T) {
	t.Parallel()
	cfn := transformSnippet(t, `
Transform: AWS::Serverless-2016-10-31
Resources:
  Forever: {Type: AWS::Logs::LogGroup}
  Kept: {Type: AWS::Logs::LogGroup, Properties: {RetentionInDays: 7}}
  Default: {Type: AWS::Serverless::Function, Properties: {CodeUri: fn, Runtime: provided.al2023, Handler: bootstrap}}
  A: {Type: AWS::Serverless::Function, Properties: {CodeUri: fn, Runtime: provided.al2023, Handler: bootstrap, LoggingConfig: {LogGroup: !Ref Forever}}}
  B: {Type: AWS::Serverless::Function, Properties: {CodeUri: fn, Runtime: provided.al2023, Handler: bootstrap, LoggingConfig: {LogGroup: !Ref Kept}}}
  C: {Type: AWS::Serverless::Function, Properties: {CodeUri: fn, Runtime: provided.al2023, Handler: bootstrap, LoggingConfig: {LogGroup: !Ref Kept}}}
`)
	require.Equal(t, []string{
		"Forever: log group without RetentionInDays: its logs never expire",
		"C: shares log group Kept with B",
		"Default: LoggingConfig.LogGroup does not name a log group of the template",
	}, problems(securitytest.FunctionLogs(cfn)))
}
