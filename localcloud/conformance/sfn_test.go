package conformance_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/stretchr/testify/require"

	sfnapi "github.com/clubdev/club/localcloud/sfn/api"
)

const passMachine = `{"StartAt":"Done","States":{"Done":{"Type":"Pass","End":true}}}`

func newMachine(t *testing.T, c *sfn.Client, name string) string {
	t.Helper()
	out, err := c.CreateStateMachine(context.Background(), &sfn.CreateStateMachineInput{Name: aws.String(name),
		Definition: aws.String(passMachine), RoleArn: aws.String("arn:aws:iam::000000000000:role/conformance")})
	require.NoError(t, err)
	return aws.ToString(out.StateMachineArn)
}

// Activities: a worker polls GetActivityTask for the tasks of an
// activity state. The local cloud has none: CreateActivity is refused,
// naming the feature.
func TestStepFunctionsActivities(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/step-functions/latest/dg/concepts-activities.html")
	c := sfn.NewFromConfig(sfnConfig(t))
	_, err := c.CreateActivity(context.Background(), &sfn.CreateActivityInput{Name: aws.String("conformance-activity")})
	refusedByDesign(t, err, sfnapi.FeatureActivities)
}

// Versions: CreateStateMachine with publish, PublishStateMachineVersion,
// and StartExecution of a version ARN are refused, never carried out on
// the latest definition.
func TestStepFunctionsVersions(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/step-functions/latest/dg/concepts-state-machine-version.html")
	ctx := context.Background()
	c := sfn.NewFromConfig(sfnConfig(t))
	_, err := c.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("conformance-published"), Publish: true,
		Definition: aws.String(passMachine), RoleArn: aws.String("arn:aws:iam::000000000000:role/conformance")})
	refusedByDesign(t, err, sfnapi.FeatureVersions)
	machine := newMachine(t, c, "conformance-versions")
	_, err = c.PublishStateMachineVersion(ctx, &sfn.PublishStateMachineVersionInput{StateMachineArn: &machine})
	refusedByDesign(t, err, sfnapi.FeatureVersions)
	_, err = c.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(machine + ":1")})
	refusedByDesign(t, err, sfnapi.FeatureVersions)
}

// Aliases: CreateStateMachineAlias and StartExecution of an alias ARN are
// refused.
func TestStepFunctionsAliases(t *testing.T) {
	cite(t, "https://docs.aws.amazon.com/step-functions/latest/dg/concepts-state-machine-alias.html")
	ctx := context.Background()
	c := sfn.NewFromConfig(sfnConfig(t))
	machine := newMachine(t, c, "conformance-aliases")
	_, err := c.CreateStateMachineAlias(ctx, &sfn.CreateStateMachineAliasInput{Name: aws.String("prod"),
		RoutingConfiguration: []sfntypes.RoutingConfigurationListItem{{StateMachineVersionArn: aws.String(machine + ":1"), Weight: 100}}})
	refusedByDesign(t, err, sfnapi.FeatureAliases)
	_, err = c.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(machine + ":prod")})
	refusedByDesign(t, err, sfnapi.FeatureAliases)
}
