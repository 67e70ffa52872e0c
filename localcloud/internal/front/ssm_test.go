package front

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/stretchr/testify/require"
)

// A SecureString parameter round-trips through the front as the API reads
// its webhook secret: GetParameter with decryption gives the value back, a
// missing name is SSM's ParameterNotFound.
func TestSSMSecureStringThroughTheFront(t *testing.T) {
	t.Parallel()
	url, counter := frontOnKumo(t)
	client := ssm.NewFromConfig(sdkConfig(url, "local", "local"))
	ctx := context.Background()

	name := uniqueName("/club-front-test/payment-webhook-secret")
	_, err := client.PutParameter(ctx, &ssm.PutParameterInput{
		Name: aws.String(name), Value: aws.String("s3cr3t-value"), Type: ssmtypes.ParameterTypeSecureString,
	})
	require.NoError(t, err)
	out, err := client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
	require.NoError(t, err)
	require.Equal(t, "s3cr3t-value", aws.ToString(out.Parameter.Value))
	require.Equal(t, ssmtypes.ParameterTypeSecureString, out.Parameter.Type)
	require.EqualValues(t, 1, out.Parameter.Version)

	_, err = client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/club-front-test/missing"), WithDecryption: aws.Bool(true)})
	var notFound *ssmtypes.ParameterNotFound
	require.ErrorAs(t, err, &notFound)

	got := map[Op]int64{}
	for _, c := range counter.Snapshot() {
		got[c.Op] = c.Count
	}
	require.Equal(t, map[Op]int64{{"ssm", "PutParameter"}: 1, {"ssm", "GetParameter"}: 2}, got)
}
