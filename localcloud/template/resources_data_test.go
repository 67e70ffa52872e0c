package template_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/template"
)

// Roles, bucket policies and dashboards are kept as data, and every
// reference to them resolves as on AWS.
func TestParseKeepsRolesBucketPoliciesAndDashboards(t *testing.T) {
	t.Parallel()
	st, err := template.Parse([]byte(`
Transform: AWS::Serverless-2016-10-31
Resources:
  Files: {Type: AWS::S3::Bucket}
  FilesPolicy:
    Type: AWS::S3::BucketPolicy
    Properties:
      Bucket: !Ref Files
      PolicyDocument:
        Statement:
          - {Effect: Deny, Principal: "*", Action: "s3:*", Resource: [!GetAtt Files.Arn, !Sub "${Files.Arn}/*"], Condition: {Bool: {aws:SecureTransport: false}}}
  FnRole:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument: {Statement: [{Effect: Allow, Principal: {Service: lambda.amazonaws.com}, Action: sts:AssumeRole}]}
      ManagedPolicyArns: [arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess]
      Policies:
        - PolicyName: files
          PolicyDocument: {Statement: [{Effect: Allow, Action: s3:GetObject, Resource: !Sub "${Files.Arn}/x/*"}]}
  Fn:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: fn, Role: !GetAtt FnRole.Arn}
  Board:
    Type: AWS::CloudWatch::Dashboard
    Properties:
      DashboardBody: !Sub '{"widgets": [{"type": "text", "properties": {"markdown": "${Files}"}}]}'
`), template.Options{Dir: t.TempDir()})
	require.NoError(t, err)

	require.Len(t, st.Roles, 1)
	r := st.Roles[0]
	require.Equal(t, "club-FnRole", r.Name)
	require.Equal(t, "arn:aws:iam::000000000000:role/club-FnRole", r.ARN)
	require.Equal(t, r.ARN, st.Functions[0].Role)
	require.Equal(t, []string{"arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess"}, r.ManagedPolicyARNs)
	require.Len(t, r.Policies, 1)
	require.Equal(t, "files", r.Policies[0].PolicyName)
	require.JSONEq(t, `{"Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::club-files/x/*"}]}`, string(r.Policies[0].PolicyDocument))

	require.Len(t, st.BucketPolicies, 1)
	require.Equal(t, "club-files", st.BucketPolicies[0].Bucket)
	require.Contains(t, string(st.BucketPolicies[0].PolicyDocument), `"aws:SecureTransport":false`)

	require.Len(t, st.Dashboards, 1)
	require.Equal(t, "club-Board", st.Dashboards[0].Name)
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(st.Dashboards[0].Body), &body))
	require.Contains(t, st.Dashboards[0].Body, "club-files")
}

func TestParseRejectsADashboardBodyThatIsNotJSON(t *testing.T) {
	t.Parallel()
	_, err := template.Parse([]byte(`
Resources:
  Board: {Type: AWS::CloudWatch::Dashboard, Properties: {DashboardBody: "{not json"}}
`), template.Options{Dir: t.TempDir()})
	require.ErrorContains(t, err, "resource Board (AWS::CloudWatch::Dashboard): DashboardBody: not JSON")
}
