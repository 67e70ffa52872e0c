package template

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Cognito resources are accepted so that the template can wire its HTTP
// API's JWT authorizer to a user pool on AWS. The local cloud provisions
// none of them: its own issuer stands in for the pool (see the gateway), so
// they are kept as data only, for the checks that read the template.

// userPoolID is a pool's deterministic id: "<region>_<LogicalId>" (real ids
// are "<region>_" and nine random characters).
func userPoolID(r *resolver, id string) string { return r.opts.Region + "_" + id }

func userPoolRefs(r *resolver, id string, _ *rawResource, _ string) (*resourceRefs, error) {
	poolID := userPoolID(r, id)
	provider := fmt.Sprintf("cognito-idp.%s.amazonaws.com/%s", r.opts.Region, poolID)
	return &resourceRefs{ref: poolID, attrs: map[string]string{
		"Arn":          r.arn("cognito-idp", "userpool/"+poolID),
		"ProviderName": provider,
		"ProviderURL":  "https://" + provider,
		"UserPoolId":   poolID,
	}}, nil
}

type userPoolProps struct {
	UserPoolName           string
	UsernameAttributes     []string
	AliasAttributes        []string
	AutoVerifiedAttributes []string
	MfaConfiguration       string
	DeletionProtection     string
	Policies               *struct {
		PasswordPolicy *struct {
			MinimumLength                 *intValue
			RequireLowercase              boolValue
			RequireNumbers                boolValue
			RequireSymbols                boolValue
			RequireUppercase              boolValue
			TemporaryPasswordValidityDays *intValue
			PasswordHistorySize           ignored
		}
		SignInPolicy ignored
	}
	AdminCreateUserConfig *struct {
		AllowAdminCreateUserOnly  boolValue
		InviteMessageTemplate     ignored
		UnusedAccountValidityDays ignored
	}
	UserAttributeUpdateSettings *struct {
		AttributesRequireVerificationBeforeUpdate []string
	}
	AccountRecoverySetting      ignored
	EnabledMfas                 ignored
	Schema                      ignored
	UsernameConfiguration       ignored
	UserPoolAddOns              ignored
	UserPoolTier                ignored
	EmailConfiguration          ignored
	EmailVerificationMessage    ignored
	EmailVerificationSubject    ignored
	VerificationMessageTemplate ignored
	DeviceConfiguration         ignored
	SmsConfiguration            ignored
	SmsAuthenticationMessage    ignored
	SmsVerificationMessage      ignored
	UserPoolTags                ignored
	// LambdaConfig is refused: triggers such as pre-token generation change
	// the claims API Gateway sees, which the local issuer does not reproduce.
}

func buildUserPool(b *builder, in resourceInput) error {
	var p userPoolProps
	if err := decodeStrict(in.props, &p); err != nil {
		return err
	}
	pool := UserPool{
		Source:                 in.id,
		Name:                   p.UserPoolName,
		ID:                     in.refs.ref,
		ARN:                    in.refs.attrs["Arn"],
		ProviderURL:            in.refs.attrs["ProviderURL"],
		UsernameAttributes:     p.UsernameAttributes,
		AutoVerifiedAttributes: p.AutoVerifiedAttributes,
		MFAConfiguration:       p.MfaConfiguration,
		DeletionProtection:     p.DeletionProtection,
	}
	if pool.Name == "" {
		pool.Name = b.r.opts.StackName + "-" + in.id
	}
	if pp := p.Policies; pp != nil && pp.PasswordPolicy != nil {
		pool.MinimumPasswordLength = pp.PasswordPolicy.MinimumLength.or(0)
	}
	if a := p.AdminCreateUserConfig; a != nil {
		pool.AdminCreateUserOnly = bool(a.AllowAdminCreateUserOnly)
	}
	if u := p.UserAttributeUpdateSettings; u != nil {
		pool.VerifyBeforeUpdate = u.AttributesRequireVerificationBeforeUpdate
	}
	b.stack.UserPools = append(b.stack.UserPools, pool)
	return nil
}

// userPoolClientRefs gives an app client a deterministic id: its logical ID
// in lower case (real ids are 26 random characters).
func userPoolClientRefs(_ *resolver, id string, _ *rawResource, _ string) (*resourceRefs, error) {
	clientID := strings.ToLower(id)
	return &resourceRefs{ref: clientID, attrs: map[string]string{"ClientId": clientID, "Name": id}}, nil
}

type userPoolClientProps struct {
	ClientName                               string
	UserPoolId                               string
	GenerateSecret                           boolValue
	ExplicitAuthFlows                        []string
	PreventUserExistenceErrors               string
	EnableTokenRevocation                    *boolValue
	AccessTokenValidity                      *intValue
	IdTokenValidity                          *intValue
	RefreshTokenValidity                     *intValue
	TokenValidityUnits                       *tokenValidityUnits
	ReadAttributes                           []string
	WriteAttributes                          []string
	AllowedOAuthFlows                        []string
	AllowedOAuthFlowsUserPoolClient          boolValue
	AllowedOAuthScopes                       []string
	CallbackURLs                             []string
	LogoutURLs                               []string
	SupportedIdentityProviders               []string
	AuthSessionValidity                      ignored
	AnalyticsConfiguration                   ignored
	DefaultRedirectURI                       ignored
	EnablePropagateAdditionalUserContextData ignored
}

type tokenValidityUnits struct {
	AccessToken  string
	IdToken      string
	RefreshToken string
}

// tokenValidity reads one token validity with Cognito's defaults: access
// and ID tokens valid 60 minutes, refresh tokens 30 days; units default to
// hours for access and ID tokens, days for refresh tokens.
func tokenValidity(v *intValue, unit string, def time.Duration, defUnit string) (time.Duration, error) {
	if v == nil {
		return def, nil
	}
	if unit == "" {
		unit = defUnit
	}
	units := map[string]time.Duration{"seconds": time.Second, "minutes": time.Minute, "hours": time.Hour, "days": 24 * time.Hour}
	d, ok := units[unit]
	if !ok {
		return 0, fmt.Errorf("TokenValidityUnits %q: expected seconds, minutes, hours or days", unit)
	}
	return time.Duration(*v) * d, nil
}

func buildUserPoolClient(b *builder, in resourceInput) error {
	var p userPoolClientProps
	if err := decodeStrict(in.props, &p); err != nil {
		return err
	}
	if p.UserPoolId == "" {
		return errors.New("UserPoolId is required")
	}
	var units tokenValidityUnits
	if p.TokenValidityUnits != nil {
		units = *p.TokenValidityUnits
	}
	c := UserPoolClient{
		Source:                     in.id,
		ClientID:                   in.refs.ref,
		UserPoolID:                 p.UserPoolId,
		GenerateSecret:             bool(p.GenerateSecret),
		ExplicitAuthFlows:          p.ExplicitAuthFlows,
		PreventUserExistenceErrors: p.PreventUserExistenceErrors,
		EnableTokenRevocation:      p.EnableTokenRevocation.or(true),
		ReadAttributes:             p.ReadAttributes,
		WriteAttributes:            p.WriteAttributes,
		AllowedOAuthFlows:          p.AllowedOAuthFlows,
	}
	var err error
	if c.AccessTokenValidity, err = tokenValidity(p.AccessTokenValidity, units.AccessToken, time.Hour, "hours"); err != nil {
		return err
	}
	if c.IDTokenValidity, err = tokenValidity(p.IdTokenValidity, units.IdToken, time.Hour, "hours"); err != nil {
		return err
	}
	if c.RefreshTokenValidity, err = tokenValidity(p.RefreshTokenValidity, units.RefreshToken, 30*24*time.Hour, "days"); err != nil {
		return err
	}
	b.stack.UserPoolClients = append(b.stack.UserPoolClients, c)
	return nil
}

func userPoolGroupRefs(r *resolver, id string, res *rawResource, _ string) (*resourceRefs, error) {
	name := id
	if raw, ok := res.Properties["GroupName"]; ok {
		v, err := r.eval(raw)
		if err != nil {
			return nil, fmt.Errorf("property \"GroupName\": %w", err)
		}
		if s, err := scalarString(v); err == nil && s != "" {
			name = s
		}
	}
	return &resourceRefs{ref: name}, nil
}

func buildUserPoolGroup(b *builder, in resourceInput) error {
	var p struct {
		GroupName   string
		UserPoolId  string
		Description string
		Precedence  *intValue
		RoleArn     string
	}
	if err := decodeStrict(in.props, &p); err != nil {
		return err
	}
	if p.UserPoolId == "" {
		return errors.New("UserPoolId is required")
	}
	g := UserPoolGroup{
		Source:      in.id,
		Name:        in.refs.ref,
		UserPoolID:  p.UserPoolId,
		Description: p.Description,
		Precedence:  p.Precedence.ptr(),
		RoleARN:     p.RoleArn,
	}
	if slices.ContainsFunc(b.stack.UserPoolGroups, func(o UserPoolGroup) bool { return o.UserPoolID == g.UserPoolID && o.Name == g.Name }) {
		return fmt.Errorf("group %q is declared twice in user pool %s", g.Name, g.UserPoolID)
	}
	b.stack.UserPoolGroups = append(b.stack.UserPoolGroups, g)
	return nil
}
