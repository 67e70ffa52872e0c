package stackimport_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/ops/stackimport"
	"github.com/clubdev/club/internal/stackfile"
)

// fakeCloudFormation is a hand-written CloudFormation that serves one stack
// and pages its resources two at a time, as the real API pages them by 100.
type fakeCloudFormation struct {
	stack     types.Stack
	resources []types.StackResourceSummary
	listCalls int
}

func (f *fakeCloudFormation) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	if aws.ToString(in.StackName) != aws.ToString(f.stack.StackName) {
		return nil, errors.New("ValidationError: Stack with id " + aws.ToString(in.StackName) + " does not exist")
	}
	return &cloudformation.DescribeStacksOutput{Stacks: []types.Stack{f.stack}}, nil
}

const pageSize = 2

func (f *fakeCloudFormation) ListStackResources(_ context.Context, in *cloudformation.ListStackResourcesInput, _ ...func(*cloudformation.Options)) (*cloudformation.ListStackResourcesOutput, error) {
	f.listCalls++
	start := 0
	if in.NextToken != nil {
		for i, r := range f.resources {
			if aws.ToString(r.LogicalResourceId) == *in.NextToken {
				start = i
			}
		}
	}
	end := min(start+pageSize, len(f.resources))
	out := &cloudformation.ListStackResourcesOutput{StackResourceSummaries: f.resources[start:end]}
	if end < len(f.resources) {
		out.NextToken = f.resources[end].LogicalResourceId
	}
	return out, nil
}

func resource(logical, typ, physical string) types.StackResourceSummary {
	return types.StackResourceSummary{
		LogicalResourceId: aws.String(logical), ResourceType: aws.String(typ),
		PhysicalResourceId: aws.String(physical), ResourceStatus: types.ResourceStatusCreateComplete,
	}
}

func param(k, v string) types.Parameter {
	return types.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)}
}

func output(k, v string) types.Output {
	return types.Output{OutputKey: aws.String(k), OutputValue: aws.String(v)}
}

const queueBase = "https://sqs.us-east-1.amazonaws.com/123456789012/"

func clubStack() *fakeCloudFormation {
	return &fakeCloudFormation{
		stack: types.Stack{
			StackName:   aws.String("club-prod"),
			StackStatus: types.StackStatusUpdateComplete,
			Outputs: []types.Output{
				output("ApiUrl", "https://abc123.execute-api.us-east-1.amazonaws.com/"),
				output("ClubTableName", "club-prod-club"),
				output("InboxRetentionDays", "from-an-output"),
			},
			Parameters: []types.Parameter{
				param("JwtIssuer", "https://cognito-idp.us-east-1.amazonaws.com/pool-1"),
				param("JwtAudience", "client-1"),
				param("UrgentMaxAgeSeconds", "45"),
				param("InboxRetentionDays", "14"),
				param("PaymentWebhookSecretParameter", "/club/payment-webhook-secret"),
				param("LegacyApiKey", "****"),
			},
		},
		resources: []types.StackResourceSummary{
			resource("ClubTable", "AWS::DynamoDB::Table", "club-prod-club"),
			resource("OutboxTable", "AWS::DynamoDB::Table", "club-prod-outbox"),
			resource("ClubEventsTopic", "AWS::SNS::Topic", "arn:aws:sns:us-east-1:123456789012:club-prod-events"),
			resource("NotificationsQueue", "AWS::SQS::Queue", queueBase+"club-prod-notifications"),
			resource("NotificationsDLQ", "AWS::SQS::Queue", queueBase+"club-prod-notifications-dlq"),
			resource("NotifierFunction", "AWS::Lambda::Function", "club-prod-NotifierFunction-AbC"),
			resource("NotifierFunctionRole", "AWS::IAM::Role", "club-prod-NotifierFunctionRole-XyZ"),
			resource("PurchaseStateMachine", "AWS::StepFunctions::StateMachine", "arn:aws:states:us-east-1:123456789012:stateMachine:Purchase-1"),
			resource("ExportsBucket", "AWS::S3::Bucket", "club-prod-exports"),
			resource("NotYetCreated", "AWS::SQS::Queue", ""),
		},
	}
}

func TestImportMapsEveryResourceKind(t *testing.T) {
	t.Parallel()
	cf := clubStack()
	got, err := stackimport.Import(context.Background(), cf, "club-prod", stackimport.Options{MailURL: "http://127.0.0.1:4580"})
	require.NoError(t, err)
	require.Equal(t, 5, cf.listCalls, "every page of resources is read")

	want := &stackfile.Stack{
		APIURL:      "https://abc123.execute-api.us-east-1.amazonaws.com",
		IssuerURL:   "https://cognito-idp.us-east-1.amazonaws.com/pool-1",
		JWTAudience: "client-1",
		MailURL:     "http://127.0.0.1:4580",
		Tables:      map[string]string{"ClubTable": "club-prod-club", "OutboxTable": "club-prod-outbox"},
		Queues: map[string]string{
			"NotificationsQueue": queueBase + "club-prod-notifications",
			"NotificationsDLQ":   queueBase + "club-prod-notifications-dlq",
		},
		Topics:        map[string]string{"ClubEventsTopic": "arn:aws:sns:us-east-1:123456789012:club-prod-events"},
		Functions:     map[string]string{"NotifierFunction": "club-prod-NotifierFunction-AbC"},
		StateMachines: map[string]string{"PurchaseStateMachine": "arn:aws:states:us-east-1:123456789012:stateMachine:Purchase-1"},
		Buckets:       map[string]string{"ExportsBucket": "club-prod-exports"},
		Outputs: map[string]string{
			"ApiUrl":              "https://abc123.execute-api.us-east-1.amazonaws.com/",
			"ClubTableName":       "club-prod-club",
			"InboxRetentionDays":  "from-an-output", // an output wins over a parameter of the same name
			"JwtIssuer":           "https://cognito-idp.us-east-1.amazonaws.com/pool-1",
			"JwtAudience":         "client-1",
			"UrgentMaxAgeSeconds": "45",
			// The webhook secret's parameter name is not a secret.
			"PaymentWebhookSecretParameter": "/club/payment-webhook-secret",
			// LegacyApiKey is NoEcho: CloudFormation masks it, so it is left out.
		},
	}
	require.Equal(t, want, got)
	require.Empty(t, got.IssuerKeyFile, "only the local cloud has an issuer key")
}

func TestImportOptionsOverride(t *testing.T) {
	t.Parallel()
	got, err := stackimport.Import(context.Background(), clubStack(), "club-prod", stackimport.Options{
		Endpoint: "http://localhost:4566", APIURL: "https://api.club.example/", PaymentURL: "http://127.0.0.1:4581",
	})
	require.NoError(t, err)
	require.Equal(t, "http://localhost:4566", got.Endpoint)
	require.Equal(t, "https://api.club.example", got.APIURL)
	require.Equal(t, "http://127.0.0.1:4581", got.PaymentURL)
}

func TestImportRefusals(t *testing.T) {
	t.Parallel()
	rolledBack := clubStack()
	rolledBack.stack.StackStatus = types.StackStatusRollbackComplete

	tests := []struct {
		name    string
		cf      *fakeCloudFormation
		stack   string
		wantErr string
		wantIs  error
	}{
		{"unknown stack", clubStack(), "club-dev", "describe stack club-dev: ValidationError", nil},
		{"blank name", clubStack(), " ", "stack name is required", nil},
		{"rolled back", rolledBack, "club-prod", "club-prod is ROLLBACK_COMPLETE", stackimport.ErrStackUnusable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := stackimport.Import(context.Background(), tt.cf, tt.stack, stackimport.Options{})
			require.ErrorContains(t, err, tt.wantErr)
			if tt.wantIs != nil {
				require.ErrorIs(t, err, tt.wantIs)
			}
		})
	}
}
