package template_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/localcloud/template"
)

// cognitoTemplate wires an HTTP API's JWT authorizer to the stack's own
// user pool unless an external issuer is given, as infra/template.yaml does.
const cognitoTemplate = `
Transform: AWS::Serverless-2016-10-31
Parameters:
  JwtIssuer: {Type: String, Default: ""}
  JwtAudience: {Type: String, Default: external-client}
Conditions:
  OwnPool: !Equals [!Ref JwtIssuer, ""]
Resources:
  Users:
    Type: AWS::Cognito::UserPool
    Condition: OwnPool
    DeletionPolicy: Retain
    Properties:
      UserPoolName: !Sub "${AWS::StackName}-users"
      UsernameAttributes: [email]
      AutoVerifiedAttributes: [email]
      UserAttributeUpdateSettings: {AttributesRequireVerificationBeforeUpdate: [email]}
      AdminCreateUserConfig: {AllowAdminCreateUserOnly: false}
      Policies: {PasswordPolicy: {MinimumLength: 12, RequireLowercase: true, RequireNumbers: true}}
      AccountRecoverySetting: {RecoveryMechanisms: [{Name: verified_email, Priority: 1}]}
      MfaConfiguration: OPTIONAL
      DeletionProtection: ACTIVE
  WebClient:
    Type: AWS::Cognito::UserPoolClient
    Condition: OwnPool
    Properties:
      UserPoolId: !Ref Users
      GenerateSecret: false
      ExplicitAuthFlows: [ALLOW_USER_SRP_AUTH, ALLOW_REFRESH_TOKEN_AUTH]
      PreventUserExistenceErrors: ENABLED
      IdTokenValidity: 30
      AccessTokenValidity: 30
      RefreshTokenValidity: 7
      TokenValidityUnits: {IdToken: minutes, AccessToken: minutes, RefreshToken: days}
      ReadAttributes: [email]
      WriteAttributes: [email]
  Teachers:
    Type: AWS::Cognito::UserPoolGroup
    Condition: OwnPool
    Properties: {UserPoolId: !Ref Users, GroupName: teacher, Precedence: 1}
  Api:
    Type: AWS::Serverless::HttpApi
    Properties:
      Auth:
        DefaultAuthorizer: Jwt
        Authorizers:
          Jwt:
            JwtConfiguration:
              issuer: !If [OwnPool, !GetAtt Users.ProviderURL, !Ref JwtIssuer]
              audience: [!If [OwnPool, !Ref WebClient, !Ref JwtAudience]]
Outputs:
  UserPoolId: {Condition: OwnPool, Value: !Ref Users}
  ClientId: {Condition: OwnPool, Value: !GetAtt WebClient.ClientId}
  Provider: {Condition: OwnPool, Value: !GetAtt Users.ProviderName}
`

func TestCognitoUserPoolIsKeptAsData(t *testing.T) {
	t.Parallel()
	st, err := template.Parse([]byte(cognitoTemplate), template.Options{})
	require.NoError(t, err)

	require.Equal(t, []template.UserPool{{
		Source:                 "Users",
		Name:                   "club-users",
		ID:                     "us-east-1_Users",
		ARN:                    "arn:aws:cognito-idp:us-east-1:000000000000:userpool/us-east-1_Users",
		ProviderURL:            "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Users",
		UsernameAttributes:     []string{"email"},
		AutoVerifiedAttributes: []string{"email"},
		VerifyBeforeUpdate:     []string{"email"},
		MinimumPasswordLength:  12,
		MFAConfiguration:       "OPTIONAL",
		DeletionProtection:     "ACTIVE",
	}}, st.UserPools)
	require.Equal(t, []template.UserPoolClient{{
		Source:                     "WebClient",
		ClientID:                   "webclient",
		UserPoolID:                 "us-east-1_Users",
		ExplicitAuthFlows:          []string{"ALLOW_USER_SRP_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"},
		PreventUserExistenceErrors: "ENABLED",
		EnableTokenRevocation:      true,
		AccessTokenValidity:        30 * time.Minute,
		IDTokenValidity:            30 * time.Minute,
		RefreshTokenValidity:       7 * 24 * time.Hour,
		ReadAttributes:             []string{"email"},
		WriteAttributes:            []string{"email"},
	}}, st.UserPoolClients)
	one := 1
	require.Equal(t, []template.UserPoolGroup{{Source: "Teachers", Name: "teacher", UserPoolID: "us-east-1_Users", Precedence: &one}}, st.UserPoolGroups)

	require.Equal(t, map[string]template.JWTAuthorizer{"Jwt": {
		Issuer:         "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Users",
		Audience:       []string{"webclient"},
		IdentitySource: "$request.header.Authorization",
	}}, st.HTTPAPIs[0].Authorizers, "the authorizer trusts the pool and its app client")
	require.Equal(t, map[string]string{
		"UserPoolId": "us-east-1_Users",
		"ClientId":   "webclient",
		"Provider":   "cognito-idp.us-east-1.amazonaws.com/us-east-1_Users",
	}, st.Outputs)
}

func TestCognitoExternalIssuerCreatesNoPool(t *testing.T) {
	t.Parallel()
	st, err := template.Parse([]byte(cognitoTemplate), template.Options{Parameters: map[string]string{"JwtIssuer": "https://idp.example.com"}})
	require.NoError(t, err)
	require.Empty(t, st.UserPools)
	require.Empty(t, st.UserPoolClients)
	require.Empty(t, st.UserPoolGroups)
	require.Empty(t, st.Outputs)
	require.Equal(t, "https://idp.example.com", st.HTTPAPIs[0].Authorizers["Jwt"].Issuer)
	require.Equal(t, []string{"external-client"}, st.HTTPAPIs[0].Authorizers["Jwt"].Audience)
}

func TestCognitoDefaultsAndErrors(t *testing.T) {
	t.Parallel()
	st, err := template.Parse([]byte(`
Resources:
  P: {Type: AWS::Cognito::UserPool}
  C: {Type: AWS::Cognito::UserPoolClient, Properties: {UserPoolId: !Ref P}}
`), template.Options{StackName: "s"})
	require.NoError(t, err)
	require.Equal(t, "s-P", st.UserPools[0].Name)
	c := st.UserPoolClients[0]
	require.Equal(t, time.Hour, c.IDTokenValidity, "Cognito's defaults")
	require.Equal(t, time.Hour, c.AccessTokenValidity)
	require.Equal(t, 30*24*time.Hour, c.RefreshTokenValidity)
	require.True(t, c.EnableTokenRevocation)

	tests := []struct{ name, src, wantErr string }{
		{
			"triggers change the claims: refused",
			"Resources:\n  P:\n    Type: AWS::Cognito::UserPool\n    Properties: {LambdaConfig: {PreTokenGeneration: arn}}\n",
			`resource P (AWS::Cognito::UserPool): unsupported property "LambdaConfig"`,
		},
		{
			"client without a pool",
			"Resources:\n  C: {Type: AWS::Cognito::UserPoolClient, Properties: {ClientName: c}}\n",
			"resource C (AWS::Cognito::UserPoolClient): UserPoolId is required",
		},
		{
			"unknown client property",
			"Resources:\n  C: {Type: AWS::Cognito::UserPoolClient, Properties: {UserPoolId: p, Secret: x}}\n",
			`resource C (AWS::Cognito::UserPoolClient): unsupported property "Secret"`,
		},
		{
			"bad validity unit",
			"Resources:\n  C: {Type: AWS::Cognito::UserPoolClient, Properties: {UserPoolId: p, IdTokenValidity: 5, TokenValidityUnits: {IdToken: weeks}}}\n",
			`resource C (AWS::Cognito::UserPoolClient): TokenValidityUnits "weeks": expected seconds, minutes, hours or days`,
		},
		{
			"unknown attribute",
			"Resources:\n  P: {Type: AWS::Cognito::UserPool}\nOutputs:\n  X: {Value: !GetAtt P.Issuer}\n",
			`output X: Fn::GetAtt: resource P (AWS::Cognito::UserPool) has no attribute "Issuer"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := template.Parse([]byte(tt.src), template.Options{})
			require.EqualError(t, err, tt.wantErr)
		})
	}
}
