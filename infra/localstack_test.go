package infra_test

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/clubdev/club/internal/securitytest"
)

// localstackServices maps the resource types of the deployed (transformed)
// template to the LocalStack services that create and run them.
var localstackServices = map[string][]string{
	"AWS::DynamoDB::Table":             {"dynamodb"},
	"AWS::SQS::Queue":                  {"sqs"},
	"AWS::SQS::QueuePolicy":            {"sqs"},
	"AWS::SNS::Topic":                  {"sns"},
	"AWS::SNS::Subscription":           {"sns"},
	"AWS::S3::Bucket":                  {"s3"},
	"AWS::S3::BucketPolicy":            {"s3"},
	"AWS::IAM::Role":                   {"iam", "sts"},
	"AWS::Lambda::Function":            {"lambda"},
	"AWS::Lambda::Permission":          {"lambda"},
	"AWS::Lambda::EventSourceMapping":  {"lambda"},
	"AWS::StepFunctions::StateMachine": {"stepfunctions"},
	"AWS::Events::Rule":                {"events"},
	"AWS::ApiGatewayV2::Api":           {"apigateway", "apigatewayv2"},
	"AWS::ApiGatewayV2::Stage":         {"apigateway", "apigatewayv2"},
	"AWS::CloudWatch::Alarm":           {"cloudwatch"},
	"AWS::CloudWatch::Dashboard":       {"cloudwatch"},
	"AWS::Logs::LogGroup":              {"logs"},
	"AWS::Cognito::UserPool":           {"cognito-idp"},
	"AWS::Cognito::UserPoolClient":     {"cognito-idp"},
	"AWS::Cognito::UserPoolGroup":      {"cognito-idp"},
}

type compose struct {
	Name     string
	Services map[string]struct {
		Image       string
		Command     []string
		Environment map[string]string
		Ports       []string
	}
	Networks map[string]struct{ Name string }
}

func loadCompose(t *testing.T) compose {
	t.Helper()
	raw, err := os.ReadFile("../localstack/docker-compose.yml")
	require.NoError(t, err)
	var c compose
	require.NoError(t, yaml.Unmarshal(raw, &c))
	return c
}

// The LocalStack compose file runs what the deployed template needs: a
// pinned image, every service the transformed template's resources use
// (plus those the stack uses at run time: the deploy, SSM's SecureString
// and its key), and the mail and payment sandboxes on the network the
// functions join.
func TestLocalStackComposeFitsTheTemplate(t *testing.T) {
	t.Parallel()
	c := loadCompose(t)
	ls, ok := c.Services["localstack"]
	require.True(t, ok)
	require.Regexp(t, `^localstack/localstack(-pro)?:\d+\.\d+\.\d+$`, ls.Image, "a pinned image, never latest")

	services := strings.Split(ls.Environment["SERVICES"], ",")
	cfn, err := securitytest.Transform(context.Background(), "template.yaml")
	require.NoError(t, err)
	need := []string{"cloudformation", "s3", "ssm", "kms", "dynamodbstreams"}
	for id, r := range cfn.Resources {
		svcs, known := localstackServices[r.Type]
		require.True(t, known, "%s (%s): which LocalStack service runs it? add it to localstackServices", id, r.Type)
		need = append(need, svcs...)
	}
	for _, s := range need {
		require.Contains(t, services, s, "SERVICES lacks %s", s)
	}

	// The sandboxes: started, listening on every interface of their
	// container, published to the host (the suite) and on the network the
	// Lambda containers join (the functions).
	network := ls.Environment["LAMBDA_DOCKER_NETWORK"]
	require.NotEmpty(t, network)
	require.Equal(t, network, c.Networks["default"].Name)
	for name, port := range map[string]string{"sandbox-mail": "4580", "sandbox-payment": "4581"} {
		s, ok := c.Services[name]
		require.True(t, ok, name)
		require.Regexp(t, `^golang:\d+\.\d+\.\d+$`, s.Image, "%s: a pinned Go image", name)
		require.Equal(t, []string{"go", "run", "./cmd/club-sandbox", strings.TrimPrefix(name, "sandbox-")}, s.Command[:4], name)
		require.Equal(t, "0.0.0.0:"+port, s.Command[slices.Index(s.Command, "--addr")+1], name)
		require.Contains(t, s.Ports, "127.0.0.1:"+port+":"+port, name)
	}
	payment := c.Services["sandbox-payment"].Command
	require.Contains(t, payment, "--webhook-url")
	require.Contains(t, payment, "--webhook-secret-file")

	// The deploy points the functions at the sandboxes by service name and
	// adds the suite's app client.
	script, err := os.ReadFile("../localstack/run-tests.sh")
	require.NoError(t, err)
	for _, want := range []string{"MailApiUrl=http://sandbox-mail:4580", "PaymentApiUrl=http://sandbox-payment:4581",
		"EnableTestUsers=true", "CGO_ENABLED=0 sam build", "--mail-url http://127.0.0.1:4580", "--payment-url http://127.0.0.1:4581"} {
		require.Contains(t, string(script), want)
	}
	require.Regexp(t, regexp.MustCompile(`compose up -d --wait localstack sandbox-mail`), string(script))
}
