package securitytest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/securitytest"
)

// The ops topic's key lets CloudWatch publish alarms for this account only.
func TestTransformedTemplateKeysServeOnlyThisAccount(t *testing.T) {
	t.Parallel()
	cfn := transformInfra(t)
	require.Contains(t, cfn.OfType("AWS::KMS::Key"), "OpsTopicKey")
	require.Empty(t, problems(securitytest.KeyPolicies(cfn)))
}

func TestKeyPoliciesFindConfusedDeputiesAndOpenKeys(t *testing.T) {
	t.Parallel()
	cfn, err := securitytest.ParseCFN([]byte(`{"Resources": {
  "Scoped": {"Type": "AWS::KMS::Key", "Properties": {"KeyPolicy": {"Statement": [
    {"Effect": "Allow", "Principal": {"AWS": {"Fn::Sub": "arn:aws:iam::${AWS::AccountId}:root"}}, "Action": "kms:*", "Resource": "*"},
    {"Effect": "Allow", "Principal": {"Service": "cloudwatch.amazonaws.com"}, "Action": ["kms:Decrypt", "kms:GenerateDataKey*"], "Resource": "*",
     "Condition": {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}}]}}},
  "OldOpsKey": {"Type": "AWS::KMS::Key", "Properties": {"KeyPolicy": {"Statement": [
    {"Sid": "CloudWatchPublishes", "Effect": "Allow", "Principal": {"Service": "cloudwatch.amazonaws.com"}, "Action": ["kms:Decrypt", "kms:GenerateDataKey*"], "Resource": "*"}]}}},
  "Open": {"Type": "AWS::KMS::Key", "Properties": {"KeyPolicy": {"Statement": [
    {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "kms:Decrypt", "Resource": "*"},
    {"Effect": "Deny", "Principal": {"Service": "s3.amazonaws.com"}, "Action": "kms:*", "Resource": "*"}]}}},
  "Unwritten": {"Type": "AWS::KMS::Key", "Properties": {}}
}}`))
	require.NoError(t, err)
	require.Equal(t, []string{
		"OldOpsKey: statement 1 (CloudWatchPublishes): the service cloudwatch.amazonaws.com may use the key without an aws:SourceAccount or aws:SourceArn condition (confused deputy)",
		"Open: statement 1: open to every principal",
		"Unwritten: no KeyPolicy written in the template: it cannot be checked",
	}, problems(securitytest.KeyPolicies(cfn)))
}
