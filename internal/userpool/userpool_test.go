package userpool_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	cip "github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider"
	"github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider/types"
	"github.com/sivchari/kumo"
	"github.com/stretchr/testify/require"

	"github.com/clubdev/club/internal/userpool"
)

// pool starts the emulator's Cognito and makes a pool with an app client
// that allows the admin password flow, as the template's test client does.
func pool(t *testing.T) (*cip.Client, string, string) {
	t.Helper()
	k := kumo.NewServer()
	t.Cleanup(k.Close)
	c := cip.NewFromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(k.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	ctx := context.Background()
	p, err := c.CreateUserPool(ctx, &cip.CreateUserPoolInput{PoolName: aws.String("club-users")})
	require.NoError(t, err)
	cl, err := c.CreateUserPoolClient(ctx, &cip.CreateUserPoolClientInput{
		UserPoolId: p.UserPool.Id, ClientName: aws.String("club-e2e"),
		ExplicitAuthFlows: []types.ExplicitAuthFlowsType{types.ExplicitAuthFlowsTypeAllowAdminUserPasswordAuth, types.ExplicitAuthFlowsTypeAllowRefreshTokenAuth},
	})
	require.NoError(t, err)
	return c, aws.ToString(p.UserPool.Id), aws.ToString(cl.UserPoolClient.ClientId)
}

func claims(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3)
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

// A test user signs in through the test app client: its ID token carries
// its sub, verified address and the client as audience; its access token
// carries no address. (The emulator has no AdminAddUserToGroup: the groups
// a role needs are added on LocalStack and AWS only.)
func TestTestUsersSignInThroughTheTestClient(t *testing.T) {
	t.Parallel()
	c, poolID, clientID := pool(t)
	ctx := context.Background()
	users, err := userpool.NewTestUsers(c, poolID, clientID)
	require.NoError(t, err)

	sub, password, err := users.Create(ctx, "ann@example.com")
	require.NoError(t, err)
	require.NotEmpty(t, sub)
	tok, err := users.SignIn(ctx, "ann@example.com", password)
	require.NoError(t, err)

	id := claims(t, tok.ID)
	require.Equal(t, sub, id["sub"])
	require.Equal(t, "ann@example.com", id["email"])
	require.Equal(t, clientID, id["aud"])
	require.Equal(t, "id", id["token_use"])
	access := claims(t, tok.Access)
	require.Equal(t, sub, access["sub"])
	require.NotContains(t, access, "email", "Cognito's access tokens carry no address")

	_, err = users.SignIn(ctx, "ann@example.com", "wrong-"+password)
	require.Error(t, err)
	_, _, err = users.Create(ctx, "ann@example.com")
	require.ErrorContains(t, err, "create ann@example.com", "a second user of the same name is refused")
}

// The directory gives a user's verified address, and nothing for a user
// without one or unknown to the pool. On AWS the pool's usernames are the
// users' subs (UsernameAttributes: email), so the API looks up the token's
// sub; the emulator keys users by the username given.
func TestDirectoryGivesVerifiedAddressesOnly(t *testing.T) {
	t.Parallel()
	c, poolID, _ := pool(t)
	ctx := context.Background()
	create := func(username string, attrs ...string) {
		var list []types.AttributeType
		for i := 0; i+1 < len(attrs); i += 2 {
			list = append(list, types.AttributeType{Name: aws.String(attrs[i]), Value: aws.String(attrs[i+1])})
		}
		_, err := c.AdminCreateUser(ctx, &cip.AdminCreateUserInput{UserPoolId: aws.String(poolID), Username: aws.String(username),
			UserAttributes: list, MessageAction: types.MessageActionTypeSuppress})
		require.NoError(t, err)
	}
	create("u-verified", "email", "ann@example.com", "email_verified", "true")
	create("u-unverified", "email", "bob@example.com", "email_verified", "false")
	create("u-none")

	dir, err := userpool.NewDirectory(c, poolID, nil)
	require.NoError(t, err)
	require.Equal(t, "ann@example.com", dir.Email(ctx, "u-verified"))
	require.Empty(t, dir.Email(ctx, "u-unverified"))
	require.Empty(t, dir.Email(ctx, "u-none"))
	require.Empty(t, dir.Email(ctx, "u-unknown"))

	other, err := userpool.NewDirectory(c, "us-east-1_nosuchpool", nil)
	require.NoError(t, err)
	require.Empty(t, other.Email(ctx, "u-verified"), "an unreachable pool gives no address, and no error to the enrollment")
}
