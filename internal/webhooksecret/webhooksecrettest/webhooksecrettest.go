// Package webhooksecrettest runs the SSM the webhook secret is read from,
// for the tests of package webhooksecret and of the API function's wiring.
package webhooksecrettest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"
)

// StartSSM runs the emulator's SSM for the test and points the process's
// AWS configuration at it (a function's main loads it from the
// environment), and returns a client of it.
func StartSSM(t *testing.T) *ssm.Client {
	t.Helper()
	k := kumo.NewServer()
	t.Cleanup(k.Close)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_ENDPOINT_URL", k.URL)
	return ssm.NewFromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(k.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
}

// PutSecret puts value into the SecureString parameter name.
func PutSecret(t *testing.T, params *ssm.Client, name, value string) {
	t.Helper()
	_, err := params.PutParameter(context.Background(), &ssm.PutParameterInput{
		Name: aws.String(name), Value: aws.String(value), Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true),
	})
	require.NoError(t, err)
}
