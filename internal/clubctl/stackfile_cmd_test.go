package clubctl

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/ops/stackimport"
	"github.com/clubdev/club/internal/stackfile"
)

// oneStackCloudFormation is a hand-written CloudFormation with one stack.
type oneStackCloudFormation struct{ region string }

func (f oneStackCloudFormation) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	if aws.ToString(in.StackName) != "club-prod" {
		return nil, errors.New("api error ValidationError: Stack with id " + aws.ToString(in.StackName) + " does not exist")
	}
	return &cloudformation.DescribeStacksOutput{Stacks: []cftypes.Stack{{
		StackName:   aws.String("club-prod"),
		StackStatus: cftypes.StackStatusCreateComplete,
		Outputs:     []cftypes.Output{{OutputKey: aws.String("ApiUrl"), OutputValue: aws.String("https://api.example.com")}},
		Parameters:  []cftypes.Parameter{{ParameterKey: aws.String("InboxRetentionDays"), ParameterValue: aws.String("7")}},
	}}}, nil
}

func (f oneStackCloudFormation) ListStackResources(context.Context, *cloudformation.ListStackResourcesInput, ...func(*cloudformation.Options)) (*cloudformation.ListStackResourcesOutput, error) {
	url := "https://sqs." + f.region + ".amazonaws.com/1/club-prod-roster"
	return &cloudformation.ListStackResourcesOutput{StackResourceSummaries: []cftypes.StackResourceSummary{
		{LogicalResourceId: aws.String("RosterQueue"), PhysicalResourceId: aws.String(url), ResourceType: aws.String("AWS::SQS::Queue")},
	}}, nil
}

func withFakeCloudFormation(endpoint string) func(*Globals) {
	return func(g *Globals) {
		g.loadAWS = func(context.Context) (aws.Config, error) {
			cfg := aws.Config{Region: "eu-west-1"}
			if endpoint != "" {
				cfg.BaseEndpoint = aws.String(endpoint)
			}
			return cfg, nil
		}
		g.clients.cloudFormation = func(cfg aws.Config) stackimport.CloudFormation {
			return oneStackCloudFormation{region: cfg.Region}
		}
	}
}

func TestStackFileWritesWhatOtherCommandsRead(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "prod.json")
	code, stdout, stderr := runWith(t, withFakeCloudFormation("http://localhost:4566"),
		"stack-file", "--stack-name", "club-prod", "--out", out, "--mail-url", "http://127.0.0.1:4580")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "wrote "+out+": 1 queues, 0 tables, 0 topics, 0 functions, 0 state machines, 0 buckets, 2 outputs\n", stdout)

	st, err := stackfile.Load(out)
	require.NoError(t, err)
	require.Equal(t, "http://localhost:4566", st.Endpoint, "AWS_ENDPOINT_URL is recorded")
	require.Equal(t, "https://api.example.com", st.APIURL)
	require.Equal(t, "http://127.0.0.1:4580", st.MailURL)
	require.Equal(t, map[string]string{"RosterQueue": "https://sqs.eu-west-1.amazonaws.com/1/club-prod-roster"}, st.Queues)
	require.Equal(t, "7", st.Outputs["InboxRetentionDays"])
	require.False(t, IsLocal(st))
}

func TestStackFileDefaultsToTheStackFilePathAndPrintsJSON(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nested", "stack.json")
	code, stdout, stderr := runWith(t, withFakeCloudFormation(""), "stack-file", "--stack-name", "club-prod", "--stack-file", path, "--json")
	require.Equal(t, 0, code, stderr)
	var got stackFileOutput
	require.NoError(t, json.Unmarshal([]byte(stdout), &got))
	require.Equal(t, path, got.File)
	require.Equal(t, 1, got.Counts["queues"])
	st, err := stackfile.Load(path)
	require.NoError(t, err)
	require.Empty(t, st.Endpoint, "no endpoint: AWS itself")
}

func TestStackFileErrors(t *testing.T) {
	t.Parallel()
	noRegion := func(g *Globals) {
		withFakeCloudFormation("")(g)
		g.loadAWS = func(context.Context) (aws.Config, error) { return aws.Config{}, nil }
	}
	tests := []struct {
		name     string
		setup    func(*Globals)
		args     []string
		wantCode int
		wantErr  string
	}{
		{"missing stack name", withFakeCloudFormation(""), []string{"stack-file"}, 2, `required flag(s) "stack-name" not set`},
		{"unknown stack", withFakeCloudFormation(""), []string{"stack-file", "--stack-name", "club-dev", "--out", filepath.Join(t.TempDir(), "x.json")}, 1, "describe stack club-dev: api error ValidationError"},
		{"no region", noRegion, []string{"stack-file", "--stack-name", "club-prod"}, 1, "no AWS region configured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runWith(t, tt.setup, tt.args...)
			require.Equal(t, tt.wantCode, code, stderr)
			require.Empty(t, stdout)
			require.Contains(t, stderr, tt.wantErr)
			require.True(t, strings.HasPrefix(stderr, "clubctl: "), "one clear line: %q", stderr)
		})
	}
}
