package securitytest_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/api"
	"github.com/clubdev/club/internal/securitytest"
	"github.com/clubdev/club/localcloud/template"
)

// publicPaths are the routes anyone may call (docs/principles.md §5).
var publicPaths = []string{"/healthz", "/webhooks/payments"}

// loadInfra parses infra/template.yaml as `sam deploy` would see it, with
// the default parameters unless overridden.
func loadInfra(t *testing.T, params map[string]string) *template.Stack {
	t.Helper()
	dir, err := os.Getwd() // a test runs in its package's directory
	if err != nil {
		panic(err)
	}
	path := filepath.Join(dir, "..", "..", "infra", "template.yaml")
	st, err := template.Load(path, template.Options{Parameters: params})
	require.NoError(t, err)
	return st
}

func parse(t *testing.T, src string) *template.Stack {
	t.Helper()
	st, err := template.Parse([]byte(src), template.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	return st
}

func problems(findings []securitytest.Finding) []string {
	out := make([]string, 0, len(findings))
	for _, f := range findings {
		out = append(out, f.String())
	}
	return out
}

func TestInfraTemplateGrantsLeastPrivilege(t *testing.T) {
	t.Parallel()
	st := loadInfra(t, nil)
	require.NotEmpty(t, st.Functions)
	roles := map[string]template.Role{}
	for _, r := range st.Roles {
		roles[r.ARN] = r
	}
	for _, fn := range st.Functions {
		if fn.Role != "" {
			require.Contains(t, roles, fn.Role, "%s's role is one of the stack's", fn.Source)
			require.NotEmpty(t, roles[fn.Role].Policies, "%s's role has its own policy", fn.Source)
			continue
		}
		require.NotEmpty(t, fn.Policies, "%s has its own policy", fn.Source)
	}
	require.Empty(t, problems(securitytest.LeastPrivilege(st)))
}

// A function with its own role is checked through the role's inline
// policies; a managed policy that could touch data is a finding.
func TestLeastPrivilegeFollowsAnExplicitRole(t *testing.T) {
	t.Parallel()
	st := parse(t, `
Transform: AWS::Serverless-2016-10-31
Resources:
  Used:
    Type: AWS::DynamoDB::Table
    Properties: {KeySchema: [{AttributeName: pk, KeyType: HASH}], StreamSpecification: {StreamViewType: NEW_IMAGE}}
  Other: {Type: AWS::DynamoDB::Table, Properties: {KeySchema: [{AttributeName: pk, KeyType: HASH}]}}
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn
      Role: !GetAtt FnRole.Arn
      Environment: {Variables: {CLUB_TABLE: !Ref Used}}
  FnRole:
    Type: AWS::IAM::Role
    Properties:
      AssumeRolePolicyDocument: {Statement: [{Effect: Allow, Principal: {Service: lambda.amazonaws.com}, Action: sts:AssumeRole}]}
      ManagedPolicyArns:
        - arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess
        - arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole
      Policies:
        - PolicyName: fn
          PolicyDocument:
            Statement:
              - {Effect: Allow, Action: [dynamodb:GetRecords, dynamodb:ListStreams], Resource: !Sub "${Used.Arn}/stream/*"}
              - {Effect: Allow, Action: [dynamodb:PutItem], Resource: !GetAtt Used.Arn}
              - {Effect: Allow, Action: [dynamodb:PutItem], Resource: !GetAtt Other.Arn}
              - {Effect: Allow, Action: [dynamodb:GetRecords], Resource: !Sub "${Other.Arn}/*"}
`)
	require.Equal(t, []string{
		`Fn: role FnRole: managed policy "arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole" cannot be checked: write its statements inline`,
		"Fn: statement 3: may write Other, which it does not use (no environment variable or event source names it)",
		`Fn: statement 4: wildcard resource "arn:aws:dynamodb:us-east-1:000000000000:table/club-Other/*" on a data service`,
	}, problems(securitytest.LeastPrivilege(st)))
}

func TestInfraTemplateEncryptsAtRest(t *testing.T) {
	t.Parallel()
	st := loadInfra(t, nil)
	require.NotEmpty(t, st.Tables)
	require.NotEmpty(t, st.Queues)
	require.NotEmpty(t, st.Topics)
	require.NotEmpty(t, st.Buckets)
	require.Empty(t, problems(securitytest.EncryptionAtRest(st)))
	require.Empty(t, problems(securitytest.PrivateBuckets(st)))
}

func TestInfraTemplateAuthenticatesEveryRoute(t *testing.T) {
	t.Parallel()
	st := loadInfra(t, nil)
	require.Empty(t, problems(securitytest.APIAuth(st, publicPaths...)))

	// On AWS (JwtIssuer empty) the authorizer trusts the stack's own pool
	// and its app client...
	require.Len(t, st.UserPools, 1)
	require.Len(t, st.UserPoolClients, 1)
	pool, client := st.UserPools[0], st.UserPoolClients[0]
	require.Equal(t, "https://cognito-idp."+st.Region+".amazonaws.com/"+pool.ID, pool.ProviderURL)
	require.Len(t, st.HTTPAPIs, 1)
	api0 := st.HTTPAPIs[0]
	require.NotEmpty(t, api0.DefaultAuthorizer)
	require.Equal(t, pool.ProviderURL, api0.Authorizers[api0.DefaultAuthorizer].Issuer)
	require.Equal(t, []string{client.ClientID}, api0.Authorizers[api0.DefaultAuthorizer].Audience)
	require.Equal(t, pool.ID, st.Outputs["UserPoolId"])
	require.Equal(t, client.ClientID, st.Outputs["UserPoolClientId"])
	require.Equal(t, pool.ProviderURL, st.Outputs["ApiJwtIssuer"], "tools learn the issuer from the outputs")
	require.Equal(t, client.ClientID, st.Outputs["ApiJwtAudience"])

	// ...whose groups are exactly the roles the API reads from cognito:groups.
	var groups []string
	for _, g := range st.UserPoolGroups {
		require.Equal(t, pool.ID, g.UserPoolID)
		groups = append(groups, g.Name)
	}
	slices.Sort(groups)
	require.Equal(t, []string{string(api.RoleOperator), string(api.RoleStudent), string(api.RoleTeacher)}, groups)

	// Every route the API function serves goes through the authorizer,
	// except the public ones.
	fn, ok := st.Function("ApiFunction")
	require.True(t, ok)
	for _, e := range fn.HTTPAPIEvents {
		if slices.Contains(publicPaths, e.Path) {
			require.Empty(t, e.Authorizer, e.Path)
		} else {
			require.Equal(t, api0.DefaultAuthorizer, e.Authorizer, "%s %s", e.Method, e.Path)
		}
	}
}

// EnableTestUsers=true adds the end-to-end suite's app client, which the
// authorizer accepts; its password flow is the one finding APIAuth makes,
// as it should on a stack that is not production. Off by default, and never
// with an external issuer.
func TestInfraTemplateCanAddATestUsersClient(t *testing.T) {
	t.Parallel()
	st := loadInfra(t, map[string]string{"EnableTestUsers": "true"})
	require.Len(t, st.UserPoolClients, 2)
	a := st.HTTPAPIs[0].Authorizers[st.HTTPAPIs[0].DefaultAuthorizer]
	var ids []string
	for _, c := range st.UserPoolClients {
		ids = append(ids, c.ClientID)
	}
	require.ElementsMatch(t, ids, a.Audience)
	require.Equal(t, []string{"TestUsersClient: flow ALLOW_ADMIN_USER_PASSWORD_AUTH sends the password itself"},
		problems(securitytest.APIAuth(st, publicPaths...)))
	require.NotEmpty(t, st.Outputs["TestUsersClientId"])

	require.Len(t, loadInfra(t, nil).UserPoolClients, 1, "off by default")
	external := loadInfra(t, map[string]string{"EnableTestUsers": "true", "JwtIssuer": "https://idp.example.com"})
	require.Empty(t, external.UserPoolClients)
	require.Equal(t, []string{"club-api"}, external.HTTPAPIs[0].Authorizers[external.HTTPAPIs[0].DefaultAuthorizer].Audience)
}

func TestInfraTemplateCanTrustAnExternalIssuer(t *testing.T) {
	t.Parallel()
	st := loadInfra(t, map[string]string{"JwtIssuer": "https://idp.example.com", "JwtAudience": "club-web"})
	require.Empty(t, st.UserPools, "no pool of its own")
	require.Empty(t, st.UserPoolClients)
	require.Empty(t, st.UserPoolGroups)
	a := st.HTTPAPIs[0].Authorizers[st.HTTPAPIs[0].DefaultAuthorizer]
	require.Equal(t, "https://idp.example.com", a.Issuer)
	require.Equal(t, []string{"club-web"}, a.Audience)
	require.NotContains(t, st.Outputs, "UserPoolId")
	require.Equal(t, "https://idp.example.com", st.Outputs["ApiJwtIssuer"])
	require.Equal(t, "club-web", st.Outputs["ApiJwtAudience"])
}

// fnTemplate is a stack with two tables, three queues, a topic and two
// buckets, and one function that uses the first of each: CLUB_TABLE names
// Used, its SQS event reads Jobs, its environment names Events, Failures
// and Files.
func fnTemplate(statements string) string {
	return `
Transform: AWS::Serverless-2016-10-31
Resources:
  Used: {Type: AWS::DynamoDB::Table, Properties: {KeySchema: [{AttributeName: pk, KeyType: HASH}]}}
  Other: {Type: AWS::DynamoDB::Table, Properties: {KeySchema: [{AttributeName: pk, KeyType: HASH}]}}
  Jobs: {Type: AWS::SQS::Queue}
  Failures: {Type: AWS::SQS::Queue}
  Elsewhere: {Type: AWS::SQS::Queue}
  Events: {Type: AWS::SNS::Topic}
  Files: {Type: AWS::S3::Bucket}
  Archive: {Type: AWS::S3::Bucket}
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn
      Environment: {Variables: {CLUB_TABLE: !Ref Used, DLQ_URL: !Ref Failures, TOPIC: !Ref Events, BUCKET: !Ref Files}}
      Events:
        Jobs: {Type: SQS, Properties: {Queue: !GetAtt Jobs.Arn}}
      Policies:
` + statements
}

func TestLeastPrivilegeFindsEveryKindOfOverreach(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		policies string
		want     []string // substrings of the findings, in order; none for a pass
	}{
		{
			name: "exactly what it uses",
			policies: `
        - Statement:
            - {Effect: Allow, Action: [dynamodb:GetItem, dynamodb:PutItem, dynamodb:UpdateItem], Resource: !GetAtt Used.Arn}
            - {Effect: Allow, Action: [dynamodb:GetItem], Resource: !GetAtt Other.Arn}
            - {Effect: Allow, Action: [sqs:ChangeMessageVisibility], Resource: !GetAtt Jobs.Arn}
            - {Effect: Allow, Action: [sqs:SendMessage], Resource: !GetAtt Failures.Arn}
            - {Effect: Allow, Action: [sns:Publish], Resource: !Ref Events}
            - {Effect: Allow, Action: [dynamodb:Query], Resource: !Sub "${Used.Arn}/index/by-date"}
            - {Effect: Allow, Action: [cloudwatch:PutMetricData, xray:PutTraceSegments], Resource: "*"}
            - {Effect: Allow, Action: [states:SendTaskSuccess, states:SendTaskFailure], Resource: "*"}
            - {Effect: Deny, Action: "*", Resource: "*"}
`,
		},
		{
			name: "decrypting with any key of the account, only through SSM",
			policies: `
        - Statement:
            - Effect: Allow
              Action: kms:Decrypt
              Resource: !Sub "arn:${AWS::Partition}:kms:${AWS::Region}:${AWS::AccountId}:key/*"
              Condition: {StringEquals: {"kms:ViaService": !Sub "ssm.${AWS::Region}.amazonaws.com"}}
`,
		},
		{
			name:     "decrypting with any key, directly",
			policies: "        - Statement: [{Effect: Allow, Action: kms:Decrypt, Resource: !Sub \"arn:aws:kms:${AWS::Region}:${AWS::AccountId}:key/*\"}]\n",
			want:     []string{`wildcard resource "arn:aws:kms:`},
		},
		{
			name: "decrypting through a service that is not SSM or Secrets Manager",
			policies: `
        - Statement:
            - {Effect: Allow, Action: kms:Decrypt, Resource: !Sub "arn:aws:kms:${AWS::Region}:${AWS::AccountId}:key/*", Condition: {StringEquals: {"kms:ViaService": "s3.us-east-1.amazonaws.com"}}}
`,
			want: []string{`wildcard resource`},
		},
		{
			name: "a ViaService pattern",
			policies: `
        - Statement:
            - {Effect: Allow, Action: kms:Decrypt, Resource: !Sub "arn:aws:kms:${AWS::Region}:${AWS::AccountId}:key/*", Condition: {StringLike: {"kms:ViaService": "*"}}}
`,
			want: []string{`wildcard resource`},
		},
		{
			name: "any key of any account, through SSM",
			policies: `
        - Statement:
            - {Effect: Allow, Action: kms:Decrypt, Resource: "arn:aws:kms:*:*:key/*", Condition: {StringEquals: {"kms:ViaService": "ssm.us-east-1.amazonaws.com"}}}
`,
			want: []string{`wildcard resource "arn:aws:kms:*:*:key/*"`},
		},
		{
			name: "more than decrypting, through SSM",
			policies: `
        - Statement:
            - {Effect: Allow, Action: [kms:Decrypt, kms:Encrypt], Resource: !Sub "arn:aws:kms:${AWS::Region}:${AWS::AccountId}:key/*", Condition: {StringEquals: {"kms:ViaService": "ssm.us-east-1.amazonaws.com"}}}
`,
			want: []string{`wildcard resource`},
		},
		{
			name:     "any action",
			policies: "        - Statement: [{Effect: Allow, Action: \"*\", Resource: !GetAtt Used.Arn}]\n",
			want:     []string{`action "*"`},
		},
		{
			name:     "a service wildcard",
			policies: "        - Statement: [{Effect: Allow, Action: \"dynamodb:*\", Resource: !GetAtt Used.Arn}]\n",
			want:     []string{`wildcard action "dynamodb:*"`},
		},
		{
			name:     "a prefix wildcard",
			policies: "        - Statement: [{Effect: Allow, Action: [dynamodb:Get*], Resource: !GetAtt Used.Arn}]\n",
			want:     []string{`wildcard action "dynamodb:Get*"`},
		},
		{
			name:     "any resource, even to read",
			policies: "        - Statement: [{Effect: Allow, Action: [dynamodb:GetItem], Resource: \"*\"}]\n",
			want:     []string{`wildcard resource "*"`},
		},
		{
			name:     "every index",
			policies: "        - Statement: [{Effect: Allow, Action: [dynamodb:Query], Resource: !Sub \"${Used.Arn}/index/*\"}]\n",
			want:     []string{`wildcard resource`},
		},
		{
			name:     "a callback action beside a scopable one on any resource",
			policies: "        - Statement: [{Effect: Allow, Action: [states:SendTaskSuccess, states:StartExecution], Resource: \"*\"}]\n",
			want:     []string{`wildcard resource "*"`},
		},
		{
			name:     "objects under a prefix of a bucket it uses",
			policies: "        - Statement: [{Effect: Allow, Action: [s3:PutObject, s3:GetObject], Resource: !Sub \"${Files.Arn}/exports/*\"}]\n",
		},
		{
			name:     "objects of a bucket it does not use",
			policies: "        - Statement: [{Effect: Allow, Action: [s3:PutObject], Resource: !Sub \"${Archive.Arn}/*\"}]\n",
			want:     []string{"may write Archive, which it does not use"},
		},
		{
			name:     "objects of any bucket",
			policies: "        - Statement: [{Effect: Allow, Action: [s3:GetObject], Resource: \"arn:aws:s3:::*/exports/*\"}]\n",
			want:     []string{`wildcard resource "arn:aws:s3:::*/exports/*"`},
		},
		{
			name:     "writes a table it does not use",
			policies: "        - Statement: [{Effect: Allow, Action: [dynamodb:PutItem], Resource: !GetAtt Other.Arn}]\n",
			want:     []string{"may write Other, which it does not use"},
		},
		{
			name:     "a read-looking statement with one write in it",
			policies: "        - Statement: [{Effect: Allow, Action: [dynamodb:GetItem, dynamodb:DeleteItem], Resource: !GetAtt Other.Arn}]\n",
			want:     []string{"may write Other"},
		},
		{
			name:     "sends to a queue it does not use",
			policies: "        - Statement: [{Effect: Allow, Action: sqs:SendMessage, Resource: !GetAtt Elsewhere.Arn}]\n",
			want:     []string{"may write Elsewhere, which it does not use"},
		},
		{
			name:     "an unknown action counts as a write",
			policies: "        - Statement: [{Effect: Allow, Action: sqs:PurgeQueue, Resource: !GetAtt Elsewhere.Arn}]\n",
			want:     []string{"may write Elsewhere"},
		},
		{
			name:     "writes outside the stack",
			policies: "        - Statement: [{Effect: Allow, Action: [s3:PutObject], Resource: arn:aws:s3:::someone-elses-bucket/x}]\n",
			want:     []string{`may write "arn:aws:s3:::someone-elses-bucket/x", which is not a resource of this stack`},
		},
		{
			name:     "NotAction",
			policies: "        - Statement: [{Effect: Allow, NotAction: [iam:*], Resource: \"*\"}]\n",
			want:     []string{"NotAction/NotResource"},
		},
		{
			name:     "a managed policy",
			policies: "        - AmazonDynamoDBFullAccess\n",
			want:     []string{`managed policy "AmazonDynamoDBFullAccess" cannot be checked`},
		},
		{
			name:     "a SAM policy template",
			policies: "        - DynamoDBCrudPolicy: {TableName: !Ref Other}\n",
			want:     []string{"SAM policy template DynamoDBCrudPolicy cannot be checked"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := problems(securitytest.LeastPrivilege(parse(t, fnTemplate(tt.policies))))
			require.Len(t, got, len(tt.want), "%q", got)
			for i, w := range tt.want {
				require.True(t, strings.HasPrefix(got[i], "Fn: "), got[i])
				require.Contains(t, got[i], w)
			}
		})
	}
}

func TestLeastPrivilegeChecksStateMachinesAndQueuePolicies(t *testing.T) {
	t.Parallel()
	st := parse(t, `
Transform: AWS::Serverless-2016-10-31
Resources:
  Used: {Type: AWS::DynamoDB::Table, Properties: {KeySchema: [{AttributeName: pk, KeyType: HASH}]}}
  Other: {Type: AWS::DynamoDB::Table, Properties: {KeySchema: [{AttributeName: pk, KeyType: HASH}]}}
  Q: {Type: AWS::SQS::Queue}
  T: {Type: AWS::SNS::Topic}
  Saga:
    Type: AWS::Serverless::StateMachine
    Properties:
      Definition: {StartAt: S, States: {S: {Type: Pass, End: true}}}
      DefinitionSubstitutions: {Table: !Ref Used}
      Policies:
        - Statement:
            - {Effect: Allow, Action: [dynamodb:UpdateItem], Resource: !GetAtt Used.Arn}
            - {Effect: Allow, Action: [dynamodb:UpdateItem], Resource: !GetAtt Other.Arn}
  Open:
    Type: AWS::SQS::QueuePolicy
    Properties:
      Queues: [!Ref Q]
      PolicyDocument:
        Statement:
          - {Effect: Allow, Principal: {Service: sns.amazonaws.com}, Action: sqs:SendMessage, Resource: !GetAtt Q.Arn}
          - {Effect: Allow, Principal: "*", Action: "sqs:*", Resource: !GetAtt Q.Arn}
`)
	require.Equal(t, []string{
		"Saga: statement 2: may write Other, which it does not use (no environment variable or event source names it)",
		"Open: statement 1: a service may send without an aws:SourceArn condition (confused deputy)",
		"Open: statement 2: open to every principal",
		`Open: statement 2: wildcard action "sqs:*"`,
	}, problems(securitytest.LeastPrivilege(st)))
}

func TestEncryptionAtRestFindsPlainResources(t *testing.T) {
	t.Parallel()
	st := parse(t, `
Resources:
  Plain: {Type: AWS::DynamoDB::Table, Properties: {KeySchema: [{AttributeName: pk, KeyType: HASH}], SSESpecification: {SSEEnabled: false}}}
  Kms: {Type: AWS::DynamoDB::Table, Properties: {KeySchema: [{AttributeName: pk, KeyType: HASH}], SSESpecification: {SSEEnabled: true, SSEType: KMS, KMSMasterKeyId: alias/club}}}
  PlainQueue: {Type: AWS::SQS::Queue}
  ManagedQueue: {Type: AWS::SQS::Queue, Properties: {SqsManagedSseEnabled: true}}
  KmsQueue: {Type: AWS::SQS::Queue, Properties: {KmsMasterKeyId: alias/aws/sqs}}
  PlainTopic: {Type: AWS::SNS::Topic}
  KmsTopic: {Type: AWS::SNS::Topic, Properties: {KmsMasterKeyId: alias/aws/sns}}
  PlainBucket: {Type: AWS::S3::Bucket}
  KmsBucket:
    Type: AWS::S3::Bucket
    Properties:
      BucketEncryption: {ServerSideEncryptionConfiguration: [{ServerSideEncryptionByDefault: {SSEAlgorithm: "aws:kms", KMSMasterKeyID: alias/club}, BucketKeyEnabled: true}]}
`)
	require.Equal(t, []string{
		"Plain: DynamoDB table without SSESpecification.SSEEnabled",
		"PlainQueue: SQS queue without SqsManagedSseEnabled or KmsMasterKeyId",
		"PlainTopic: SNS topic without KmsMasterKeyId",
		"PlainBucket: S3 bucket without BucketEncryption",
	}, problems(securitytest.EncryptionAtRest(st)))
}

func TestPrivateBucketsFindsBucketsThatMayBePublic(t *testing.T) {
	t.Parallel()
	st := parse(t, `
Resources:
  NoBlock: {Type: AWS::S3::Bucket}
  HalfBlocked: {Type: AWS::S3::Bucket, Properties: {PublicAccessBlockConfiguration: {BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: false}}}
  Blocked: {Type: AWS::S3::Bucket, Properties: {PublicAccessBlockConfiguration: {BlockPublicAcls: true, BlockPublicPolicy: "true", IgnorePublicAcls: true, RestrictPublicBuckets: true}}}
`)
	require.Equal(t, []string{
		"HalfBlocked: S3 bucket without a PublicAccessBlockConfiguration that turns all four settings on",
		"NoBlock: S3 bucket without a PublicAccessBlockConfiguration that turns all four settings on",
	}, problems(securitytest.PrivateBuckets(st)))
}

func TestAPIAuthFindsOpenRoutesAndWeakPools(t *testing.T) {
	t.Parallel()
	st := parse(t, `
Transform: AWS::Serverless-2016-10-31
Resources:
  Pool:
    Type: AWS::Cognito::UserPool
    Properties: {Policies: {PasswordPolicy: {MinimumLength: 8}}}
  Client:
    Type: AWS::Cognito::UserPoolClient
    Properties:
      UserPoolId: !Ref Pool
      GenerateSecret: true
      ExplicitAuthFlows: [ALLOW_USER_PASSWORD_AUTH]
      AllowedOAuthFlows: [implicit]
      IdTokenValidity: 1
      TokenValidityUnits: {IdToken: days}
  Api:
    Type: AWS::Serverless::HttpApi
    Properties:
      Auth:
        DefaultAuthorizer: Good
        Authorizers:
          Good: {JwtConfiguration: {issuer: !GetAtt Pool.ProviderURL, audience: [!Ref Client]}}
          Foreign: {JwtConfiguration: {issuer: "https://issuer.example.com", audience: [x]}}
          WrongClient: {JwtConfiguration: {issuer: !GetAtt Pool.ProviderURL, audience: [someone-else]}}
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: fn
      Events:
        Health: {Type: HttpApi, Properties: {ApiId: !Ref Api, Method: GET, Path: /healthz, Auth: {Authorizer: NONE}}}
        Open: {Type: HttpApi, Properties: {ApiId: !Ref Api, Method: GET, Path: /secrets, Auth: {Authorizer: NONE}}}
        Closed: {Type: HttpApi, Properties: {ApiId: !Ref Api, Method: GET, Path: /classes}}
`)
	got := problems(securitytest.APIAuth(st, publicPaths...))
	slices.Sort(got)
	require.Equal(t, []string{
		`Api: authorizer Foreign trusts "https://issuer.example.com", not the stack's user pool`,
		`Api: authorizer WrongClient accepts audience "someone-else", which is not an app client of its pool`,
		"Client: a public client must not have a secret",
		"Client: flow ALLOW_USER_PASSWORD_AUTH sends the password itself",
		"Client: sign-in errors reveal which users exist (PreventUserExistenceErrors)",
		"Client: the implicit grant puts tokens in URLs",
		"Client: tokens valid longer than " + securitytest.MaxTokenValidity.String(),
		"Fn: route GET /secrets (event Open) has no authorizer",
		"Pool: a changed e-mail address takes effect before it is verified (UserAttributeUpdateSettings)",
		"Pool: e-mail addresses are not verified (AutoVerifiedAttributes)",
		"Pool: passwords may be shorter than 12 characters",
	}, got)
	require.Equal(t, 24*time.Hour, st.UserPoolClients[0].IDTokenValidity)
}
