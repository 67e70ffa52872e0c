package userpool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	cip "github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider"
	"github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider/types"

	"github.com/clubdev/club/internal/obs"
)

// API is the part of the Cognito Identity Provider client this package uses.
type API interface {
	AdminGetUser(ctx context.Context, in *cip.AdminGetUserInput, optFns ...func(*cip.Options)) (*cip.AdminGetUserOutput, error)
	AdminCreateUser(ctx context.Context, in *cip.AdminCreateUserInput, optFns ...func(*cip.Options)) (*cip.AdminCreateUserOutput, error)
	AdminSetUserPassword(ctx context.Context, in *cip.AdminSetUserPasswordInput, optFns ...func(*cip.Options)) (*cip.AdminSetUserPasswordOutput, error)
	AdminAddUserToGroup(ctx context.Context, in *cip.AdminAddUserToGroupInput, optFns ...func(*cip.Options)) (*cip.AdminAddUserToGroupOutput, error)
	AdminInitiateAuth(ctx context.Context, in *cip.AdminInitiateAuthInput, optFns ...func(*cip.Options)) (*cip.AdminInitiateAuthOutput, error)
}

var _ API = (*cip.Client)(nil)

// Directory finds users' verified e-mail addresses in one pool.
type Directory struct {
	api    API
	poolID string
	log    *slog.Logger
}

// NewDirectory returns the directory of the pool poolID; logger receives
// the lookups that found nothing usable (nil discards them).
func NewDirectory(api API, poolID string, logger *slog.Logger) (*Directory, error) {
	if api == nil || poolID == "" {
		return nil, errors.New("userpool: a client and a pool id are required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Directory{api: api, poolID: poolID, log: logger}, nil
}

// Email returns the verified e-mail address of the user whose sub (or
// username) is userID, or "" when the pool has none for it or cannot be
// reached; the reason is logged, the address never.
func (d *Directory) Email(ctx context.Context, userID string) string {
	out, err := d.api.AdminGetUser(ctx, &cip.AdminGetUserInput{UserPoolId: aws.String(d.poolID), Username: aws.String(userID)})
	if err != nil {
		var notFound *types.UserNotFoundException
		if errors.As(err, &notFound) {
			d.log.WarnContext(ctx, "user pool: no such user; no address for the first profile", slog.String("user_id", userID))
		} else {
			d.log.WarnContext(ctx, "user pool: lookup of the address failed", slog.String("user_id", userID), obs.Err(err))
		}
		return ""
	}
	email, verified := attribute(out.UserAttributes, "email"), attribute(out.UserAttributes, "email_verified")
	if email == "" || verified != "true" {
		d.log.InfoContext(ctx, "user pool: the user has no verified address", slog.String("user_id", userID))
		return ""
	}
	return email
}

func attribute(attrs []types.AttributeType, name string) string {
	for _, a := range attrs {
		if aws.ToString(a.Name) == name {
			return aws.ToString(a.Value)
		}
	}
	return ""
}

// Tokens are what a sign-in returns.
type Tokens struct {
	ID     string // the ID token: sub, email, cognito:groups, aud = the app client
	Access string // the access token: sub, cognito:groups, client_id; no email
}

// TestUsers makes and signs in users of one pool through one app client
// that allows ADMIN_USER_PASSWORD_AUTH.
type TestUsers struct {
	api      API
	poolID   string
	clientID string
}

// NewTestUsers returns the test users of pool poolID signing in with
// clientID.
func NewTestUsers(api API, poolID, clientID string) (*TestUsers, error) {
	if api == nil || poolID == "" || clientID == "" {
		return nil, errors.New("userpool: a client, a pool id and an app client id are required")
	}
	return &TestUsers{api: api, poolID: poolID, clientID: clientID}, nil
}

// Create makes a confirmed user with the verified address email, a random
// permanent password and the groups given, and returns its sub (the id the
// API knows it by) and its password.
func (u *TestUsers) Create(ctx context.Context, email string, groups ...string) (sub, password string, err error) {
	password, err = newPassword()
	if err != nil {
		return "", "", err
	}
	out, err := u.api.AdminCreateUser(ctx, &cip.AdminCreateUserInput{
		UserPoolId: aws.String(u.poolID), Username: aws.String(email),
		UserAttributes: []types.AttributeType{
			{Name: aws.String("email"), Value: aws.String(email)},
			{Name: aws.String("email_verified"), Value: aws.String("true")},
		},
		MessageAction:     types.MessageActionTypeSuppress, // no invitation mail
		TemporaryPassword: aws.String(password),
	})
	if err != nil {
		return "", "", fmt.Errorf("userpool: create %s: %w", email, err)
	}
	if out.User != nil {
		sub = attribute(out.User.Attributes, "sub")
	}
	if _, err := u.api.AdminSetUserPassword(ctx, &cip.AdminSetUserPasswordInput{
		UserPoolId: aws.String(u.poolID), Username: aws.String(email), Password: aws.String(password), Permanent: true,
	}); err != nil {
		return "", "", fmt.Errorf("userpool: set the password of %s: %w", email, err)
	}
	for _, g := range groups {
		if _, err := u.api.AdminAddUserToGroup(ctx, &cip.AdminAddUserToGroupInput{
			UserPoolId: aws.String(u.poolID), Username: aws.String(email), GroupName: aws.String(g),
		}); err != nil {
			return "", "", fmt.Errorf("userpool: add %s to %s: %w", email, g, err)
		}
	}
	if sub == "" {
		got, err := u.api.AdminGetUser(ctx, &cip.AdminGetUserInput{UserPoolId: aws.String(u.poolID), Username: aws.String(email)})
		if err != nil {
			return "", "", fmt.Errorf("userpool: read %s: %w", email, err)
		}
		sub = attribute(got.UserAttributes, "sub")
	}
	if sub == "" {
		return "", "", fmt.Errorf("userpool: %s has no sub", email)
	}
	return sub, password, nil
}

// SignIn signs username in with its password and returns its tokens.
func (u *TestUsers) SignIn(ctx context.Context, username, password string) (Tokens, error) {
	out, err := u.api.AdminInitiateAuth(ctx, &cip.AdminInitiateAuthInput{
		UserPoolId: aws.String(u.poolID), ClientId: aws.String(u.clientID),
		AuthFlow:       types.AuthFlowTypeAdminUserPasswordAuth,
		AuthParameters: map[string]string{"USERNAME": username, "PASSWORD": password},
	})
	if err != nil {
		return Tokens{}, fmt.Errorf("userpool: sign in %s: %w", username, err)
	}
	if out.ChallengeName != "" {
		return Tokens{}, fmt.Errorf("userpool: sign in %s: unexpected challenge %s", username, out.ChallengeName)
	}
	if out.AuthenticationResult == nil || aws.ToString(out.AuthenticationResult.IdToken) == "" {
		return Tokens{}, fmt.Errorf("userpool: sign in %s: no tokens", username)
	}
	return Tokens{ID: aws.ToString(out.AuthenticationResult.IdToken), Access: aws.ToString(out.AuthenticationResult.AccessToken)}, nil
}

// newPassword is 24 random hex characters with the classes a pool's
// password policy may require.
func newPassword() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b) + "Aa1!", nil
}
