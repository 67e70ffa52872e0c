package securitytest_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/securitytest"
)

// A failed first deploy can be retried, and a stack deletion keeps the data.
func TestTransformedTemplateDeploysAgainAfterAFailedCreate(t *testing.T) {
	t.Parallel()
	cfn := transformInfra(t)
	require.Empty(t, problems(securitytest.Redeployable(cfn)))
	for _, id := range []string{"ClubTable", "OutboxTable", "ExportsBucket", "UserPool"} {
		require.Equal(t, "RetainExceptOnCreate", cfn.Resources[id].DeletionPolicy, id)
	}
}

func TestTransformedTemplateBucketsAreTLSOnly(t *testing.T) {
	t.Parallel()
	cfn := transformInfra(t)
	require.NotEmpty(t, cfn.OfType("AWS::S3::Bucket"))
	require.Empty(t, problems(securitytest.TLSOnlyBuckets(cfn)))
	// The lifecycle rule: CloudFormation's Rule has no Filter property;
	// its Prefix is what it sends to S3 as the rule's filter.
	rules := cfn.Resources["ExportsBucket"].Properties["LifecycleConfiguration"].(map[string]any)["Rules"].([]any)
	require.Len(t, rules, 1)
	require.Equal(t, "exports/", rules[0].(map[string]any)["Prefix"])
}

// Browsers may call the API from the origins the AllowedOrigins parameter
// names, never from any origin.
func TestTransformedTemplateAPIHasCORSFromAParameter(t *testing.T) {
	t.Parallel()
	cfn := transformInfra(t)
	require.Empty(t, problems(securitytest.CORS(cfn)))
	p := cfn.Parameters["AllowedOrigins"]
	require.Equal(t, "CommaDelimitedList", p["Type"])
	re := regexp.MustCompile(p["AllowedPattern"].(string))
	require.True(t, re.MatchString("https://app.example.com"))
	require.True(t, re.MatchString("http://localhost:5173"))
	require.False(t, re.MatchString("*"))
	require.False(t, re.MatchString("https://*.example.com"))

	st := loadInfra(t, map[string]string{"AllowedOrigins": "https://a.example.com,http://localhost:5173"})
	require.Equal(t, []string{"https://a.example.com", "http://localhost:5173"}, st.HTTPAPIs[0].CORS.AllowOrigins)
	require.Contains(t, st.HTTPAPIs[0].CORS.AllowHeaders, "authorization")
	require.Contains(t, st.HTTPAPIs[0].CORS.AllowHeaders, "idempotency-key")
}

// Parameters a person types are bounded; filter policies are maps; the
// issuer is the one Cognito documents for the pool.
func TestTransformedTemplateParametersAndSubscriptions(t *testing.T) {
	t.Parallel()
	cfn := transformInfra(t)
	for name, p := range cfn.Parameters {
		if p["Type"] == "Number" && p["AllowedValues"] == nil {
			require.Contains(t, p, "MinValue", name)
			require.Contains(t, p, "MaxValue", name)
		}
	}
	subs := cfn.OfType("AWS::SNS::Subscription")
	require.NotEmpty(t, subs)
	for _, id := range subs {
		require.IsType(t, map[string]any{}, cfn.Resources[id].Properties["FilterPolicy"], "%s: FilterPolicy as a mapping", id)
	}
	issuer := map[string]any{"Fn::If": []any{"CreateUserPool",
		map[string]any{"Fn::Sub": "https://cognito-idp.${AWS::Region}.amazonaws.com/${UserPool}"},
		map[string]any{"Ref": "JwtIssuer"}}}
	require.Equal(t, issuer, cfn.Outputs["ApiJwtIssuer"].(map[string]any)["Value"])
	body := cfn.Resources["ClubApi"].Properties["Body"].(map[string]any)
	jwt := body["components"].(map[string]any)["securitySchemes"].(map[string]any)["Jwt"].(map[string]any)
	require.Equal(t, issuer, jwt["x-amazon-apigateway-authorizer"].(map[string]any)["jwtConfiguration"].(map[string]any)["issuer"])
}

func TestDeployChecksFindTheOldMistakes(t *testing.T) {
	t.Parallel()
	cfn := transformSnippet(t, `
Transform: AWS::Serverless-2016-10-31
Resources:
  Table:
    Type: AWS::DynamoDB::Table
    DeletionPolicy: Retain
    UpdateReplacePolicy: Retain
    Properties: {TableName: fixed, KeySchema: [{AttributeName: pk, KeyType: HASH}], AttributeDefinitions: [{AttributeName: pk, AttributeType: S}], BillingMode: PAY_PER_REQUEST}
  Pool:
    Type: AWS::Cognito::UserPool
    DeletionPolicy: RetainExceptOnCreate
    UpdateReplacePolicy: Retain
    Properties: {DeletionProtection: ACTIVE}
  Queue: {Type: AWS::SQS::Queue, DeletionPolicy: Retain}
  Files: {Type: AWS::S3::Bucket}
  Half:
    Type: AWS::S3::Bucket
    DeletionPolicy: RetainExceptOnCreate
    UpdateReplacePolicy: Retain
  HalfPolicy:
    Type: AWS::S3::BucketPolicy
    Properties:
      Bucket: !Ref Half
      PolicyDocument:
        Statement:
          - {Effect: Deny, Principal: "*", Action: "s3:*", Resource: !GetAtt Half.Arn, Condition: {Bool: {aws:SecureTransport: false}}}
  Open:
    Type: AWS::Serverless::HttpApi
    Properties:
      CorsConfiguration: {AllowOrigins: ["*"]}
  Closed: {Type: AWS::Serverless::HttpApi}
`)
	require.Equal(t, []string{
		`Files: DeletionPolicy "": a stateful resource needs RetainExceptOnCreate (kept when the stack is deleted, removed when a first create rolls back)`,
		`Files: UpdateReplacePolicy "": a replacement would delete the data (Retain)`,
		"Pool: DeletionProtection ACTIVE: the rollback of a failed create cannot delete the pool",
		"Queue: DeletionPolicy Retain: a failed first create leaves it behind (RetainExceptOnCreate or Delete)",
		`Table: DeletionPolicy "Retain": a stateful resource needs RetainExceptOnCreate (kept when the stack is deleted, removed when a first create rolls back)`,
	}, problems(securitytest.Redeployable(cfn)))
	require.Equal(t, []string{
		"Files: no bucket policy denies requests without TLS (aws:SecureTransport false) on the bucket and its objects",
		"Half: no bucket policy denies requests without TLS (aws:SecureTransport false) on the bucket and its objects",
	}, problems(securitytest.TLSOnlyBuckets(cfn)))
	require.Equal(t, []string{
		"Closed: no CORS configuration: browsers cannot call the API",
		"Open: CORS allows origin *: name the web app's origins",
	}, problems(securitytest.CORS(cfn)))
}
