package stackimport

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/clubdev/club/internal/stackfile"
)

// CloudFormation is the part of *cloudformation.Client that Import uses.
type CloudFormation interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, opts ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
	ListStackResources(ctx context.Context, in *cloudformation.ListStackResourcesInput, opts ...func(*cloudformation.Options)) (*cloudformation.ListStackResourcesOutput, error)
}

var _ CloudFormation = (*cloudformation.Client)(nil)

// Names of the template's outputs and parameters that have fields of their
// own in the stack file.
const (
	OutputAPIURL      = "ApiUrl"
	ParameterIssuer   = "JwtIssuer"
	ParameterAudience = "JwtAudience"
	// maskedNoEchoValue is what DescribeStacks returns for NoEcho parameters.
	maskedNoEchoValue = "****"
)

// Options complete what CloudFormation does not know.
type Options struct {
	// Endpoint is the AWS endpoint the stack is reached through
	// (AWS_ENDPOINT_URL, for LocalStack); empty for AWS itself.
	Endpoint string
	// APIURL overrides the ApiUrl output (for example a custom domain).
	APIURL string
	// MailURL and PaymentURL are the providers' base URLs (sandboxes), if any.
	MailURL    string
	PaymentURL string
}

// ErrStackUnusable is returned (wrapped) for a stack whose resources cannot
// be relied on: it failed to create, rolled back, or is being deleted.
var ErrStackUnusable = errors.New("stack is not usable")

// unusable are the statuses in which a stack's resources are gone or
// half-made. Stacks being updated still have every resource and are fine.
var unusable = map[types.StackStatus]bool{
	types.StackStatusCreateFailed:       true,
	types.StackStatusRollbackInProgress: true,
	types.StackStatusRollbackFailed:     true,
	types.StackStatusRollbackComplete:   true,
	types.StackStatusDeleteInProgress:   true,
	types.StackStatusDeleteFailed:       true,
	types.StackStatusDeleteComplete:     true,
}

// Import describes the stack named stackName (a name or a stack id) and
// returns its stack file.
func Import(ctx context.Context, cf CloudFormation, stackName string, o Options) (*stackfile.Stack, error) {
	if strings.TrimSpace(stackName) == "" {
		return nil, errors.New("stack name is required")
	}
	out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stackName)})
	if err != nil {
		return nil, fmt.Errorf("describe stack %s: %w", stackName, err)
	}
	if len(out.Stacks) != 1 {
		return nil, fmt.Errorf("describe stack %s: expected one stack, got %d", stackName, len(out.Stacks))
	}
	desc := out.Stacks[0]
	if unusable[desc.StackStatus] {
		return nil, fmt.Errorf("%w: %s is %s", ErrStackUnusable, stackName, desc.StackStatus)
	}

	st := &stackfile.Stack{
		Endpoint:      o.Endpoint,
		MailURL:       o.MailURL,
		PaymentURL:    o.PaymentURL,
		Tables:        map[string]string{},
		Queues:        map[string]string{},
		Topics:        map[string]string{},
		Functions:     map[string]string{},
		StateMachines: map[string]string{},
		Buckets:       map[string]string{},
		Outputs:       map[string]string{},
	}
	for _, out := range desc.Outputs {
		st.Outputs[aws.ToString(out.OutputKey)] = aws.ToString(out.OutputValue)
	}
	for _, p := range desc.Parameters {
		key, value := aws.ToString(p.ParameterKey), aws.ToString(p.ParameterValue)
		if p.ResolvedValue != nil { // an SSM parameter type: the value is its name
			value = aws.ToString(p.ResolvedValue)
		}
		switch key {
		case ParameterIssuer:
			st.IssuerURL = value
		case ParameterAudience:
			st.JWTAudience = value
		}
		if _, taken := st.Outputs[key]; taken || value == maskedNoEchoValue {
			continue
		}
		st.Outputs[key] = value
	}
	st.APIURL = strings.TrimRight(st.Outputs[OutputAPIURL], "/")
	if o.APIURL != "" {
		st.APIURL = strings.TrimRight(o.APIURL, "/")
	}

	pages := cloudformation.NewListStackResourcesPaginator(cf, &cloudformation.ListStackResourcesInput{StackName: aws.String(stackName)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list resources of stack %s: %w", stackName, err)
		}
		for _, r := range page.StackResourceSummaries {
			addResource(st, r)
		}
	}
	return st, nil
}

// addResource files one resource under its kind. Resources without a
// physical id (not created yet, or failed) and kinds the tools do not use are
// skipped.
func addResource(st *stackfile.Stack, r types.StackResourceSummary) {
	logical, physical := aws.ToString(r.LogicalResourceId), aws.ToString(r.PhysicalResourceId)
	if logical == "" || physical == "" {
		return
	}
	switch aws.ToString(r.ResourceType) {
	case "AWS::SQS::Queue":
		st.Queues[logical] = physical
	case "AWS::DynamoDB::Table":
		st.Tables[logical] = physical
	case "AWS::SNS::Topic":
		st.Topics[logical] = physical
	case "AWS::Lambda::Function":
		st.Functions[logical] = physical
	case "AWS::StepFunctions::StateMachine":
		st.StateMachines[logical] = physical
	case "AWS::S3::Bucket":
		st.Buckets[logical] = physical
	}
}
